"""The zoo: real models from other projects, built once into a cache and run on every provider."""
