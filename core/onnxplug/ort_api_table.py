"""What onnxplug does with each public name of onnxruntime's Python API (1.32).

:data:`TABLE` maps ``name`` (top-level) or ``Class.member`` to ``(status, reason)``: ``same``
(behaves as onnxruntime's; the reason notes any limit), ``no-op`` (accepted and logged at verbose
severity; the reason says why nothing changes), or ``refused`` (raises
:class:`~onnxplug.errors.UnsupportedOptionError`; the reason says why). A refused top-level name is
still there: :func:`refused_stand_in` gives a stand-in class that raises when called, instantiated
or asked for an attribute, so ``hasattr`` feature checks see it. ``docs/onnxruntime-api.md`` is
generated from this table by :mod:`onnxplug.api_coverage`.
"""

from __future__ import annotations

from typing import Any, NoReturn

from onnxplug.errors import UnsupportedOptionError

SAME, NOOP, REFUSED = "same", "no-op", "refused"
STATUSES = (SAME, NOOP, REFUSED)

_LORA = "LoRA adapters (onnxruntime's adapter format) are not implemented"
_EP_CONTEXT = ("onnxruntime's compiled-model (EP context) files are not implemented; onnxplug's providers compile "
               "at session creation")
_PACKAGE = "onnxruntime's model packages are not implemented; load the .onnx file"
_MEMORY = ("onnxruntime's allocators and memory descriptions are not implemented; values are placed with OrtValue's "
           "device_type and device_id")
_DEVICE = "onnxruntime's device descriptions are not implemented; devices are named by device_type and device_id"
_EXTERNAL = ("initializers handed over by the application are not implemented; the model's own (and external) "
             "data is read")
_SPARSE = "sparse tensors are not implemented"
_STREAM = "device streams are not implemented; each provider synchronises its own work"
_SESSION_BINDING = "onnxruntime's C-level binding; use IOBinding (InferenceSession.io_binding())"
_TUNING_RESULTS = "kernel tuning results are onnxruntime's (ROCm/CUDA tunable ops); onnxplug's kernels are not tuned"
_INITIALIZERS = ("initializers handed over by the application are not implemented; put them in the model or feed "
                 "them as inputs")

TABLE: dict[str, tuple[str, str]] = {
    "AdapterFormat": (REFUSED, _LORA),
    "AdapterFormat.export_adapter": (REFUSED, _LORA),
    "AdapterFormat.get_adapter_version": (REFUSED, _LORA),
    "AdapterFormat.get_format_version": (REFUSED, _LORA),
    "AdapterFormat.get_model_version": (REFUSED, _LORA),
    "AdapterFormat.get_parameters": (REFUSED, _LORA),
    "AdapterFormat.read_adapter": (REFUSED, _LORA),
    "AdapterFormat.set_adapter_version": (REFUSED, _LORA),
    "AdapterFormat.set_model_version": (REFUSED, _LORA),
    "AdapterFormat.set_parameters": (REFUSED, _LORA),
    "ExecutionMode": (SAME, ""),
    "ExecutionMode.ORT_PARALLEL": (SAME, ""),
    "ExecutionMode.ORT_SEQUENTIAL": (SAME, ""),
    "ExecutionMode.name": (SAME, ""),
    "ExecutionMode.value": (SAME, ""),
    "ExecutionOrder": (SAME, ""),
    "ExecutionOrder.DEFAULT": (SAME, ""),
    "ExecutionOrder.MEMORY_EFFICIENT": (SAME, ""),
    "ExecutionOrder.PRIORITY_BASED": (SAME, ""),
    "ExecutionOrder.name": (SAME, ""),
    "ExecutionOrder.value": (SAME, ""),
    "GraphOptimizationLevel": (SAME, ""),
    "GraphOptimizationLevel.ORT_DISABLE_ALL": (SAME, ""),
    "GraphOptimizationLevel.ORT_ENABLE_ALL": (SAME, ""),
    "GraphOptimizationLevel.ORT_ENABLE_BASIC": (SAME, ""),
    "GraphOptimizationLevel.ORT_ENABLE_EXTENDED": (SAME, ""),
    "GraphOptimizationLevel.ORT_ENABLE_LAYOUT": (SAME, ""),
    "GraphOptimizationLevel.name": (SAME, ""),
    "GraphOptimizationLevel.value": (SAME, ""),
    "IOBinding": (SAME, ""),
    "IOBinding.bind_cpu_input": (SAME, ""),
    "IOBinding.bind_input": (SAME, ""),
    "IOBinding.bind_ortvalue_input": (SAME, ""),
    "IOBinding.bind_ortvalue_output": (SAME, ""),
    "IOBinding.bind_output": (SAME, ""),
    "IOBinding.clear_binding_inputs": (SAME, ""),
    "IOBinding.clear_binding_outputs": (SAME, ""),
    "IOBinding.copy_outputs_to_cpu": (SAME, ""),
    "IOBinding.get_outputs": (SAME, ""),
    "IOBinding.get_outputs_as_ortvaluevector": (SAME, "the same list as get_outputs()"),
    "IOBinding.synchronize_inputs": (SAME, ""),
    "IOBinding.synchronize_outputs": (SAME, ""),
    "InferenceSession": (SAME, ""),
    "InferenceSession.create_ortvalue_from_shape_and_type": (SAME, "vendor_id other than -1 is refused"),
    "InferenceSession.disable_fallback": (
        SAME, "onnxplug never retries a failed run, which is what disabling asks for"),
    "InferenceSession.enable_fallback": (REFUSED, "onnxplug never retries a failed run on other providers"),
    "InferenceSession.end_profiling": (SAME, ""),
    "InferenceSession.get_input_epdevices": (
        REFUSED, "onnxruntime's per-input device descriptions; device values are bound with IOBinding and OrtValue"),
    "InferenceSession.get_input_memory_infos": (REFUSED, _MEMORY),
    "InferenceSession.get_inputs": (SAME, ""),
    "InferenceSession.get_modelmeta": (SAME, ""),
    "InferenceSession.get_output_memory_infos": (REFUSED, _MEMORY),
    "InferenceSession.get_outputs": (SAME, ""),
    "InferenceSession.get_overridable_initializers": (SAME, ""),
    "InferenceSession.get_profiling_start_time_ns": (SAME, ""),
    "InferenceSession.get_provider_graph_assignment_info": (
        SAME, "one subgraph per kernel (a node, or a fused group) of the main graph"),
    "InferenceSession.get_provider_options": (SAME, ""),
    "InferenceSession.get_providers": (SAME, ""),
    "InferenceSession.get_session_options": (SAME, ""),
    "InferenceSession.get_tuning_results": (REFUSED, _TUNING_RESULTS),
    "InferenceSession.io_binding": (SAME, ""),
    "InferenceSession.release_captured_graph": (REFUSED, "CUDA graph capture is not implemented"),
    "InferenceSession.run": (SAME, ""),
    "InferenceSession.run_async": (SAME, ""),
    "InferenceSession.run_with_iobinding": (SAME, ""),
    "InferenceSession.run_with_ort_values": (SAME, ""),
    "InferenceSession.run_with_ortvaluevector": (
        REFUSED, "onnxruntime's C-level value vectors; use run_with_ort_values"),
    "InferenceSession.set_ep_dynamic_options": (REFUSED, "providers take their options at session creation only"),
    "InferenceSession.set_providers": (SAME, ""),
    "InferenceSession.set_tuning_results": (REFUSED, _TUNING_RESULTS),
    "LoraAdapter": (REFUSED, _LORA),
    "LoraAdapter.Load": (REFUSED, _LORA),
    "ModelCompiler": (REFUSED, _EP_CONTEXT),
    "ModelCompiler.clear_ep_context_data_write_func": (REFUSED, _EP_CONTEXT),
    "ModelCompiler.compile_to_bytes": (REFUSED, _EP_CONTEXT),
    "ModelCompiler.compile_to_file": (REFUSED, _EP_CONTEXT),
    "ModelCompiler.compile_to_stream": (REFUSED, _EP_CONTEXT),
    "ModelCompiler.set_ep_context_binary_information": (REFUSED, _EP_CONTEXT),
    "ModelCompiler.set_ep_context_data_write_func": (REFUSED, _EP_CONTEXT),
    "ModelMetadata": (SAME, ""),
    "ModelMetadata.custom_metadata_map": (SAME, ""),
    "ModelMetadata.description": (SAME, ""),
    "ModelMetadata.domain": (SAME, ""),
    "ModelMetadata.graph_description": (SAME, ""),
    "ModelMetadata.graph_name": (SAME, ""),
    "ModelMetadata.producer_name": (SAME, ""),
    "ModelMetadata.version": (SAME, ""),
    "ModelPackage": (REFUSED, _PACKAGE),
    "ModelPackage.add_shared_asset": (REFUSED, _PACKAGE),
    "ModelPackage.close": (REFUSED, _PACKAGE),
    "ModelPackage.commit": (REFUSED, _PACKAGE),
    "ModelPackage.compute_directory_hash": (REFUSED, _PACKAGE),
    "ModelPackage.get_component_json": (REFUSED, _PACKAGE),
    "ModelPackage.get_info": (REFUSED, _PACKAGE),
    "ModelPackage.get_variant_json": (REFUSED, _PACKAGE),
    "ModelPackage.open": (REFUSED, _PACKAGE),
    "ModelPackage.prune": (REFUSED, _PACKAGE),
    "ModelPackage.remove_component": (REFUSED, _PACKAGE),
    "ModelPackage.remove_shared_asset": (REFUSED, _PACKAGE),
    "ModelPackage.remove_variant": (REFUSED, _PACKAGE),
    "ModelPackage.remove_variant_executor_info": (REFUSED, _PACKAGE),
    "ModelPackage.resolve_asset_uri": (REFUSED, _PACKAGE),
    "ModelPackage.resolve_string_ref": (REFUSED, _PACKAGE),
    "ModelPackage.set_additional_metadata_json": (REFUSED, _PACKAGE),
    "ModelPackage.set_component_external": (REFUSED, _PACKAGE),
    "ModelPackage.set_component_inline": (REFUSED, _PACKAGE),
    "ModelPackage.set_layout": (REFUSED, _PACKAGE),
    "ModelPackage.set_metadata": (REFUSED, _PACKAGE),
    "ModelPackage.set_variant": (REFUSED, _PACKAGE),
    "ModelPackage.set_variant_executor_info_external": (REFUSED, _PACKAGE),
    "ModelPackage.set_variant_executor_info_inline": (REFUSED, _PACKAGE),
    "ModelPackageComponentContext": (REFUSED, _PACKAGE),
    "ModelPackageComponentContext.create_session": (REFUSED, _PACKAGE),
    "ModelPackageComponentContext.get_selected_variant_folder_path": (REFUSED, _PACKAGE),
    "ModelPackageComponentContext.get_selected_variant_name": (REFUSED, _PACKAGE),
    "ModelPackageContext": (REFUSED, _PACKAGE),
    "ModelPackageContext.get_component_count": (REFUSED, _PACKAGE),
    "ModelPackageContext.get_component_names": (REFUSED, _PACKAGE),
    "ModelPackageContext.get_schema_version": (REFUSED, _PACKAGE),
    "ModelPackageContext.get_variant_count": (REFUSED, _PACKAGE),
    "ModelPackageContext.get_variant_ep_name": (REFUSED, _PACKAGE),
    "ModelPackageContext.get_variant_names": (REFUSED, _PACKAGE),
    "ModelPackageContext.resolve_string_ref": (REFUSED, _PACKAGE),
    "ModelPackageContext.select_component": (REFUSED, _PACKAGE),
    "ModelPackageOptions": (REFUSED, _PACKAGE),
    "ModelPackageWriteMode": (REFUSED, _PACKAGE),
    "ModelPackageWriteMode.DENSE": (REFUSED, _PACKAGE),
    "ModelPackageWriteMode.PRESERVE": (REFUSED, _PACKAGE),
    "ModelPackageWriteMode.name": (REFUSED, _PACKAGE),
    "ModelPackageWriteMode.value": (REFUSED, _PACKAGE),
    "NodeArg": (SAME, ""),
    "NodeArg.name": (SAME, ""),
    "NodeArg.shape": (SAME, ""),
    "NodeArg.type": (SAME, ""),
    "OrtAllocatorType": (REFUSED, _MEMORY),
    "OrtAllocatorType.INVALID": (REFUSED, _MEMORY),
    "OrtAllocatorType.ORT_ARENA_ALLOCATOR": (REFUSED, _MEMORY),
    "OrtAllocatorType.ORT_DEVICE_ALLOCATOR": (REFUSED, _MEMORY),
    "OrtAllocatorType.name": (REFUSED, _MEMORY),
    "OrtAllocatorType.value": (REFUSED, _MEMORY),
    "OrtArenaCfg": (REFUSED, _MEMORY),
    "OrtArenaCfg.arena_extend_strategy": (REFUSED, _MEMORY),
    "OrtArenaCfg.initial_chunk_size_bytes": (REFUSED, _MEMORY),
    "OrtArenaCfg.initial_growth_chunk_size_bytes": (REFUSED, _MEMORY),
    "OrtArenaCfg.max_dead_bytes_per_chunk": (REFUSED, _MEMORY),
    "OrtArenaCfg.max_mem": (REFUSED, _MEMORY),
    "OrtArenaCfg.max_power_of_two_extend_bytes": (REFUSED, _MEMORY),
    "OrtCompileApiFlags": (REFUSED, _EP_CONTEXT),
    "OrtCompileApiFlags.ERROR_IF_NO_NODES_COMPILED": (REFUSED, _EP_CONTEXT),
    "OrtCompileApiFlags.ERROR_IF_OUTPUT_FILE_EXISTS": (REFUSED, _EP_CONTEXT),
    "OrtCompileApiFlags.NONE": (REFUSED, _EP_CONTEXT),
    "OrtCompileApiFlags.name": (REFUSED, _EP_CONTEXT),
    "OrtCompileApiFlags.value": (REFUSED, _EP_CONTEXT),
    "OrtDevice": (REFUSED, _DEVICE),
    "OrtDevice.device_id": (REFUSED, _DEVICE),
    "OrtDevice.device_mem_type": (REFUSED, _DEVICE),
    "OrtDevice.device_type": (REFUSED, _DEVICE),
    "OrtDevice.device_vendor_id": (REFUSED, _DEVICE),
    "OrtDevice.make": (REFUSED, _DEVICE),
    "OrtDeviceMemoryType": (REFUSED, _MEMORY),
    "OrtDeviceMemoryType.DEFAULT": (REFUSED, _MEMORY),
    "OrtDeviceMemoryType.HOST_ACCESSIBLE": (REFUSED, _MEMORY),
    "OrtDeviceMemoryType.name": (REFUSED, _MEMORY),
    "OrtDeviceMemoryType.value": (REFUSED, _MEMORY),
    "OrtDeviceVendorId": (REFUSED, _DEVICE),
    "OrtDeviceVendorId.AMD": (REFUSED, _DEVICE),
    "OrtDeviceVendorId.ARM": (REFUSED, _DEVICE),
    "OrtDeviceVendorId.HUAWEI": (REFUSED, _DEVICE),
    "OrtDeviceVendorId.INTEL": (REFUSED, _DEVICE),
    "OrtDeviceVendorId.MICROSOFT": (REFUSED, _DEVICE),
    "OrtDeviceVendorId.NONE": (REFUSED, _DEVICE),
    "OrtDeviceVendorId.NVIDIA": (REFUSED, _DEVICE),
    "OrtDeviceVendorId.QUALCOMM": (REFUSED, _DEVICE),
    "OrtEpAssignedNode": (SAME, ""),
    "OrtEpAssignedNode.domain": (SAME, ""),
    "OrtEpAssignedNode.name": (SAME, ""),
    "OrtEpAssignedNode.op_type": (SAME, ""),
    "OrtEpAssignedSubgraph": (SAME, ""),
    "OrtEpAssignedSubgraph.ep_name": (SAME, ""),
    "OrtEpAssignedSubgraph.get_nodes": (SAME, ""),
    "OrtEpContextData": (REFUSED, _EP_CONTEXT),
    "OrtEpContextData.read": (REFUSED, _EP_CONTEXT),
    "OrtEpContextData.size": (REFUSED, _EP_CONTEXT),
    "OrtEpContextDataBuffer": (REFUSED, _EP_CONTEXT),
    "OrtEpContextDataBuffer.allocate": (REFUSED, _EP_CONTEXT),
    "OrtEpContextDataBuffer.is_allocated": (REFUSED, _EP_CONTEXT),
    "OrtEpContextDataBuffer.max_size": (REFUSED, _EP_CONTEXT),
    "OrtEpContextDataBuffer.size": (REFUSED, _EP_CONTEXT),
    "OrtEpContextDataBuffer.write": (REFUSED, _EP_CONTEXT),
    "OrtEpDevice": (SAME, ""),
    "OrtEpDevice.create_sync_stream": (REFUSED, _STREAM),
    "OrtEpDevice.device": (SAME, ""),
    "OrtEpDevice.ep_metadata": (SAME, ""),
    "OrtEpDevice.ep_name": (SAME, ""),
    "OrtEpDevice.ep_options": (SAME, ""),
    "OrtEpDevice.ep_vendor": (SAME, "the distribution that ships the provider"),
    "OrtEpDevice.memory_info": (REFUSED, _MEMORY),
    "OrtExecutionProviderDevicePolicy": (SAME, ""),
    "OrtExecutionProviderDevicePolicy.DEFAULT": (SAME, ""),
    "OrtExecutionProviderDevicePolicy.MAX_EFFICIENCY": (SAME, ""),
    "OrtExecutionProviderDevicePolicy.MAX_PERFORMANCE": (SAME, ""),
    "OrtExecutionProviderDevicePolicy.MIN_OVERALL_POWER": (SAME, ""),
    "OrtExecutionProviderDevicePolicy.PREFER_CPU": (SAME, ""),
    "OrtExecutionProviderDevicePolicy.PREFER_GPU": (SAME, ""),
    "OrtExecutionProviderDevicePolicy.PREFER_NPU": (SAME, ""),
    "OrtExecutionProviderDevicePolicy.name": (SAME, ""),
    "OrtExecutionProviderDevicePolicy.value": (SAME, ""),
    "OrtExternalInitializerInfo": (REFUSED, _EXTERNAL),
    "OrtExternalInitializerInfo.byte_size": (REFUSED, _EXTERNAL),
    "OrtExternalInitializerInfo.file_offset": (REFUSED, _EXTERNAL),
    "OrtExternalInitializerInfo.filepath": (REFUSED, _EXTERNAL),
    "OrtHardwareDevice": (SAME, ""),
    "OrtHardwareDevice.device_id": (SAME, "the provider's device index (onnxruntime: the PCI device id)"),
    "OrtHardwareDevice.metadata": (SAME, ""),
    "OrtHardwareDevice.type": (SAME, ""),
    "OrtHardwareDevice.vendor": (SAME, ""),
    "OrtHardwareDevice.vendor_id": (SAME, ""),
    "OrtHardwareDeviceType": (SAME, ""),
    "OrtHardwareDeviceType.CPU": (SAME, ""),
    "OrtHardwareDeviceType.GPU": (SAME, ""),
    "OrtHardwareDeviceType.NPU": (SAME, ""),
    "OrtHardwareDeviceType.name": (SAME, ""),
    "OrtHardwareDeviceType.value": (SAME, ""),
    "OrtMemType": (REFUSED, _MEMORY),
    "OrtMemType.CPU": (REFUSED, _MEMORY),
    "OrtMemType.CPU_INPUT": (REFUSED, _MEMORY),
    "OrtMemType.CPU_OUTPUT": (REFUSED, _MEMORY),
    "OrtMemType.DEFAULT": (REFUSED, _MEMORY),
    "OrtMemType.name": (REFUSED, _MEMORY),
    "OrtMemType.value": (REFUSED, _MEMORY),
    "OrtMemoryInfo": (REFUSED, _MEMORY),
    "OrtMemoryInfo.allocator_type": (REFUSED, _MEMORY),
    "OrtMemoryInfo.create_v2": (REFUSED, _MEMORY),
    "OrtMemoryInfo.device_id": (REFUSED, _MEMORY),
    "OrtMemoryInfo.device_mem_type": (REFUSED, _MEMORY),
    "OrtMemoryInfo.device_vendor_id": (REFUSED, _MEMORY),
    "OrtMemoryInfo.mem_type": (REFUSED, _MEMORY),
    "OrtMemoryInfo.name": (REFUSED, _MEMORY),
    "OrtMemoryInfoDeviceType": (REFUSED, _MEMORY),
    "OrtMemoryInfoDeviceType.CPU": (REFUSED, _MEMORY),
    "OrtMemoryInfoDeviceType.FPGA": (REFUSED, _MEMORY),
    "OrtMemoryInfoDeviceType.GPU": (REFUSED, _MEMORY),
    "OrtMemoryInfoDeviceType.NPU": (REFUSED, _MEMORY),
    "OrtMemoryInfoDeviceType.name": (REFUSED, _MEMORY),
    "OrtMemoryInfoDeviceType.value": (REFUSED, _MEMORY),
    "OrtSparseFormat": (REFUSED, _SPARSE),
    "OrtSparseFormat.ORT_SPARSE_BLOCK_SPARSE": (REFUSED, _SPARSE),
    "OrtSparseFormat.ORT_SPARSE_COO": (REFUSED, _SPARSE),
    "OrtSparseFormat.ORT_SPARSE_CSRC": (REFUSED, _SPARSE),
    "OrtSparseFormat.ORT_SPARSE_UNDEFINED": (REFUSED, _SPARSE),
    "OrtSparseFormat.name": (REFUSED, _SPARSE),
    "OrtSparseFormat.value": (REFUSED, _SPARSE),
    "OrtSyncStream": (REFUSED, _STREAM),
    "OrtSyncStream.get_handle": (REFUSED, _STREAM),
    "OrtValue": (SAME, ""),
    "OrtValue.as_sparse_tensor": (REFUSED, _SPARSE),
    "OrtValue.data_ptr": (SAME, "host arrays and device values whose provider exposes a pointer"),
    "OrtValue.data_type": (SAME, ""),
    "OrtValue.device_name": (SAME, ""),
    "OrtValue.element_type": (SAME, ""),
    "OrtValue.from_dlpack": (SAME, ""),
    "OrtValue.has_value": (SAME, ""),
    "OrtValue.is_sparse_tensor": (SAME, "always False: sparse tensors are not implemented"),
    "OrtValue.is_tensor": (SAME, ""),
    "OrtValue.is_tensor_sequence": (SAME, ""),
    "OrtValue.numpy": (SAME, ""),
    "OrtValue.ort_value_from_sparse_tensor": (REFUSED, _SPARSE),
    "OrtValue.ortvalue_from_numpy": (SAME, "vendor_id other than -1 is refused"),
    "OrtValue.ortvalue_from_numpy_with_onnx_type": (SAME, ""),
    "OrtValue.ortvalue_from_shape_and_type": (SAME, "vendor_id other than -1 is refused"),
    "OrtValue.shape": (SAME, ""),
    "OrtValue.tensor_size_in_bytes": (SAME, ""),
    "OrtValue.update_inplace": (SAME, ""),
    "RunOptions": (SAME, ""),
    "RunOptions.add_active_adapter": (REFUSED, _LORA),
    "RunOptions.add_run_config_entry": (SAME, ""),
    "RunOptions.get_run_config_entry": (SAME, ""),
    "SessionIOBinding": (REFUSED, _SESSION_BINDING),
    "SessionIOBinding.bind_input": (REFUSED, _SESSION_BINDING),
    "SessionIOBinding.bind_ortvalue_input": (REFUSED, _SESSION_BINDING),
    "SessionIOBinding.bind_ortvalue_output": (REFUSED, _SESSION_BINDING),
    "SessionIOBinding.bind_output": (REFUSED, _SESSION_BINDING),
    "SessionIOBinding.clear_binding_inputs": (REFUSED, _SESSION_BINDING),
    "SessionIOBinding.clear_binding_outputs": (REFUSED, _SESSION_BINDING),
    "SessionIOBinding.copy_outputs_to_cpu": (REFUSED, _SESSION_BINDING),
    "SessionIOBinding.get_outputs": (REFUSED, _SESSION_BINDING),
    "SessionIOBinding.synchronize_inputs": (REFUSED, _SESSION_BINDING),
    "SessionIOBinding.synchronize_outputs": (REFUSED, _SESSION_BINDING),
    "SessionOptions": (SAME, ""),
    "SessionOptions.add_external_initializers": (REFUSED, _INITIALIZERS),
    "SessionOptions.add_external_initializers_from_files_in_memory": (REFUSED, _INITIALIZERS),
    "SessionOptions.add_free_dimension_override_by_denotation": (
        REFUSED, "dimension denotations are not read; use add_free_dimension_override_by_name"),
    "SessionOptions.add_free_dimension_override_by_name": (SAME, ""),
    "SessionOptions.add_initializer": (REFUSED, _INITIALIZERS),
    "SessionOptions.add_provider": (SAME, ""),
    "SessionOptions.add_provider_for_devices": (SAME, ""),
    "SessionOptions.add_session_config_entry": (SAME, ""),
    "SessionOptions.clear_ep_context_data_read_func": (REFUSED, _EP_CONTEXT),
    "SessionOptions.get_session_config_entry": (SAME, ""),
    "SessionOptions.has_providers": (SAME, ""),
    "SessionOptions.register_custom_ops_library": (
        REFUSED, "custom-op libraries are native onnxruntime code; onnxplug kernels come from provider plugins "
        "(docs/write-a-provider.md)"),
    "SessionOptions.set_ep_context_data_read_func": (REFUSED, _EP_CONTEXT),
    "SessionOptions.set_load_cancellation_flag": (REFUSED, "model loading cannot be cancelled"),
    "SessionOptions.set_provider_selection_policy": (
        SAME, "policies as onnxruntime maps them, over onnxplug's providers (onnxplug.ep_devices)"),
    "SessionOptions.set_provider_selection_policy_delegate": (SAME, ""),
    "SparseTensor": (REFUSED, _SPARSE),
    "SparseTensor.as_blocksparse_view": (REFUSED, _SPARSE),
    "SparseTensor.as_coo_view": (REFUSED, _SPARSE),
    "SparseTensor.as_csrc_view": (REFUSED, _SPARSE),
    "SparseTensor.data_type": (REFUSED, _SPARSE),
    "SparseTensor.dense_shape": (REFUSED, _SPARSE),
    "SparseTensor.device_name": (REFUSED, _SPARSE),
    "SparseTensor.format": (REFUSED, _SPARSE),
    "SparseTensor.sparse_coo_from_numpy": (REFUSED, _SPARSE),
    "SparseTensor.sparse_csr_from_numpy": (REFUSED, _SPARSE),
    "SparseTensor.to_cuda": (REFUSED, _SPARSE),
    "SparseTensor.values": (REFUSED, _SPARSE),
    "capi": (SAME, ""),
    "copy_tensors": (
        REFUSED, "onnxruntime's batched device copy with a stream; copy with OrtValue.numpy and "
        "OrtValue.ortvalue_from_numpy"),
    "create_and_register_allocator": (REFUSED, _MEMORY),
    "create_and_register_allocator_v2": (REFUSED, _MEMORY),
    "cuda_version": (SAME, "empty: no CUDA build (the cupy provider brings its own)"),
    "disable_telemetry_events": (NOOP, "onnxplug collects and sends no telemetry"),
    "enable_telemetry_events": (NOOP, "onnxplug collects and sends no telemetry"),
    "get_all_providers": (
        SAME, "onnxplug's provider names (CPUExecutionProvider and the like are accepted as aliases)"),
    "get_available_providers": (SAME, "onnxplug's provider names, the default last"),
    "get_build_info": (SAME, "describes onnxplug's build"),
    "get_device": (SAME, "the default provider's device, CPU"),
    "get_ep_devices": (SAME, "one entry per device of each available provider (onnxplug.ep_devices)"),
    "get_version_string": (SAME, "1.32.0+onnxplug.<version> (onnxplug.capi)"),
    "has_collective_ops": (SAME, "False: no collective ops"),
    "import_capi_exception": (SAME, ""),
    "onnxruntime_validation": (REFUSED, "onnxruntime's check of its own build and platform"),
    "package_name": (SAME, "onnxplug"),
    "preload_dlls": (
        NOOP, "onnxplug preloads no CUDA, cuDNN or MSVC libraries (the cupy provider loads CUDA through CuPy)"),
    "print_debug_info": (SAME, "prints onnxplug's build and providers"),
    "register_execution_provider_library": (
        SAME, "loads an onnxplug provider plugin (.py file or package directory); native libraries are refused with "
        "ProviderLibraryError"),
    "set_default_logger_callback": (
        REFUSED, "log records go through Python's logging (the onnxplug.* loggers): attach a logging.Handler"),
    "set_default_logger_severity": (SAME, ""),
    "set_default_logger_verbosity": (SAME, ""),
    "set_global_thread_pool_sizes": (
        NOOP, "the global pools serve sessions with use_per_session_threads=False; every onnxplug session has its "
        "own threads"),
    "set_seed": (SAME, ""),
    "unregister_execution_provider_library": (SAME, "removes a plugin loaded by register_execution_provider_library"),
    "version": (SAME, "1.32.0+onnxplug.<version>"),
}


def _option_entries() -> dict[str, tuple[str, str]]:
    """``SessionOptions``/``RunOptions`` attributes, from :mod:`onnxplug.option_rules` (one table)."""
    from onnxplug import option_rules as rules

    status = {rules.IMPLEMENTED: SAME, rules.TUNING: NOOP, rules.REFUSED: REFUSED}
    entries = {}
    for (scope, name), rule in rules.RULES.items():
        if scope in (rules.SESSION_OPTIONS, rules.RUN_OPTIONS):
            accepted = f" (accepted: {' or '.join(rule.accepted)})" if rule.accepted else ""
            entries[f"{scope}.{name}"] = (status[rule.status], rule.what + accepted)
    return entries


TABLE.update(_option_entries())


class _RefusedMeta(type):
    def __call__(cls, *args: Any, **kwargs: Any) -> NoReturn:
        cls._refuse("")

    def __getattr__(cls, name: str) -> NoReturn:
        if name.startswith("__"):
            raise AttributeError(name)
        cls._refuse(f".{name}")

    def _refuse(cls, member: str) -> NoReturn:
        raise UnsupportedOptionError(f"onnxruntime.{cls.__name__}{member} is not implemented by onnxplug: "
                                     f"{cls._reason}")


def refused_stand_in(name: str, module: str) -> type:
    """The stand-in for a refused top-level name; ``AttributeError`` for a name onnxruntime lacks too."""
    status, reason = TABLE.get(name, ("", ""))
    if status != "refused" or "." in name:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return _RefusedMeta(name, (), {"_reason": reason, "__doc__": f"Refused: {reason}", "__module__": module})
