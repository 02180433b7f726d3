"""Inference runtimes: the family's network moved to TorchScript, ONNX Runtime or OpenVINO
(DESIGN.md section 3, "Changes as settings"). Only the network moves; the family's pre- and
post-process stay and are timed as with eager PyTorch.

Interface (docs/CONTRACTS.md "Runtimes"):

    load_runtime(level, network, example, device, precision) -> RuntimeNetwork

`level` is one of `config.knobs.RUNTIMES`; `network` the family's network in its export form
(a module whose forward takes the pre-processed input tensor and returns tensors); `example` one
input of the shape that will run. A level that cannot apply raises `RuntimeNotApplicable` with one
line saying why (an op the exporter cannot handle, a missing extra).
"""
