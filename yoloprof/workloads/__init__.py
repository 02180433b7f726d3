"""What a capture runs: a model family's model, loss and pipeline (the built-in YOLO-style
detector, a user's factory, Ultralytics, LibreYOLO, torchvision), its data. Nothing here imports at package import time: readers must start
without torch (DESIGN.md section 2), so callers import the submodules they need.

Public entry points (the capture calls these):

* `families.workload(settings)` -> `Workload` (the family's adapter, family_api.py, with the
  user's loss and post-process hooks); `families.adapter_of(family)`, `families.input_size(settings)`.
* `models.build_model(name="yolo", size="n", num_classes=80, seed=0, weights="none", kwargs=None)`
  -> nn.Module (the built-in detector or a factory's); `models.is_builtin(name)`;
  `models.generic_loss(outputs)`.
* `data.build_dataset(data, imgsz, num_classes=80, n_images_hint=None, seed=0)`,
  `data.make_loader(dataset, batch, workers=0, shuffle=False, seed=0, pin_memory=False)` yielding
  `(uint8 images [B, 3, H, W], targets [M, 6])`, `data.num_batches(dataset, batch)`,
  `data.to_device(images, targets, device, dtype=float32, non_blocking=True)`.
* `pipeline.load_sources(source)`, `pipeline.batch_sources(sources, batch)`,
  `pipeline.preprocess(images, imgsz, device="cpu", dtype=float32)` -> `(tensor, meta)`,
  `pipeline.postprocess(raw, meta, conf=0.25, iou=0.45, max_det=300)` -> list of [K, 6],
  `pipeline.decode(source)` -> RGB PIL image.
* `nms.batched_nms(boxes, scores, classes, iou)`, `nms.nms_backend()`.
* `sample.sample_image_path()`.
"""
