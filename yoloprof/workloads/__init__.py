"""What a capture runs: the built-in YOLO-style detector (or a user's model), its loss, its data,
and the inference pipeline. Nothing here imports at package import time: readers must start
without torch (DESIGN.md section 2), so callers import the submodules they need.

Public entry points (the capture calls these):

* `models.build_model(name="yolo", size="n", num_classes=80, seed=0, weights="none", kwargs=None)`
  -> nn.Module; `models.build_loss(loss_target, model_name="yolo", num_classes=80, kwargs=None)`
  -> callable `(outputs, targets) -> (loss, parts)`; `models.is_builtin(name)`;
  `models.generic_loss(outputs)`.
* `data.build_dataset(data, imgsz, num_classes=80, n_images_hint=None, seed=0)`,
  `data.make_loader(dataset, batch, workers=0, shuffle=False, seed=0, pin_memory=False)` yielding
  `(uint8 images [B, 3, H, W], targets [M, 6])`, `data.num_batches(dataset, batch)`,
  `data.to_device(images, targets, device, dtype=float32, non_blocking=True)`.
* `pipeline.load_sources(source)`, `pipeline.batch_sources(sources, batch)`,
  `pipeline.preprocess(images, imgsz, device="cpu", dtype=float32)` -> `(tensor, meta)`,
  `pipeline.postprocess(raw, meta, conf=0.25, iou=0.45, max_det=300)` -> list of [K, 6],
  `pipeline.postprocess_fn(model_name)` (identity for user models).
* `nms.batched_nms(boxes, scores, classes, iou)`, `nms.nms_backend()`.
* `sample.sample_image_path()`.
"""
