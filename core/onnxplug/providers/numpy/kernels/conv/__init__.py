"""Convolution: the strategy dispatcher (``dispatch``) and the engines it picks from (1x1 products,
``depthwise``, ``padded_rows`` / ``row_products``, ``winograd``, im2col), plus the channels-last
engines (``channels_last``, ``bottleneck``) of the ``com.onnxplug.nhwc`` ops."""
