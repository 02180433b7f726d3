"""Each family's training recipe against its trainer's rules worked by hand (parameter groups and
their hyperparameters, weight decay scaling, `optimizer=auto`, accumulation), its EMA against the
EMA formula, clipping against the norm computed by hand, and LibreYOLO's PGI branch against the
trainer's forward on the same batch (docs/workloads.md "The trainer's step")."""

from __future__ import annotations

import math

import pytest
import torch

from yoloprof.capturing.passes.recipe_figures import add_amortised, amortised_step_ms
from yoloprof.capturing.passes.step_calls import TrainContext
from yoloprof.workloads.family_api import ModelRef, RecipeInputs

BATCH = 2


def _ids(params):
    return {id(p) for p in params}


def _groups_by_ids(optimizer):
    return {frozenset(_ids(g["params"])): g for g in optimizer.param_groups}


def _ultralytics(tmp_path, monkeypatch):
    pytest.importorskip("ultralytics")
    monkeypatch.setenv("YOLO_CONFIG_DIR", str(tmp_path / "ultralytics"))
    from yoloprof.workloads.families import adapter_of

    adapter = adapter_of("ultralytics")
    return adapter, adapter.build(ModelRef(family="ultralytics", name="yolov8n.yaml", num_classes=3, imgsz=64))


def test_ultralytics_groups_decay_and_auto_choice_follow_its_trainer(tmp_path, monkeypatch):
    adapter, model = _ultralytics(tmp_path, monkeypatch)
    batch, images, nc = 3, 64, 3
    recipe = adapter.train_recipe(model, RecipeInputs(batch=batch, images=images, lr=0.5, num_classes=nc))
    # by hand from ultralytics/engine/trainer.py: nbs 64, weight_decay 5e-4, epochs 100
    accumulate = round(64 / batch)  # 21
    decay = 5e-4 * batch * accumulate / 64
    iterations = math.ceil(images / 64) * 100  # 100 <= 10000: AdamW, lr fit to the classes
    assert iterations <= 10000 and recipe.optimizer_every == accumulate == 21
    assert type(recipe.optimizer) is torch.optim.AdamW
    lr = round(0.002 * 5 / (4 + nc), 6)
    norm = tuple(v for k, v in torch.nn.__dict__.items() if "Norm" in k)
    bias, bn, weight = [], [], []
    for module_name, module in model.named_modules():
        for name, p in module.named_parameters(recurse=False):
            full = f"{module_name}.{name}"
            (bias if "bias" in full else bn if isinstance(module, norm) else weight).append(p)
    groups = _groups_by_ids(recipe.optimizer)
    expected = [(weight, decay), (bn, 0.0), (bias, 0.0)]
    assert set(groups) == {frozenset(_ids(ps)) for ps, _ in expected}
    for params, wd in expected:
        group = groups[frozenset(_ids(params))]
        assert group["weight_decay"] == pytest.approx(wd) and group["lr"] == pytest.approx(lr)
        assert group["betas"] == (0.9, 0.999)
    assert recipe.about["clip_max_norm"] == 10.0


def test_ultralytics_auto_picks_musgd_for_a_long_training(tmp_path, monkeypatch):
    adapter, model = _ultralytics(tmp_path, monkeypatch)
    images = 64 * 101  # ceil(images / 64) * 100 epochs = 10100 iterations > 10000
    recipe = adapter.train_recipe(model, RecipeInputs(batch=BATCH, images=images, lr=0.01, num_classes=3))
    assert type(recipe.optimizer).__name__ == "MuSGD" and isinstance(recipe.optimizer, torch.optim.Optimizer)


def test_ultralytics_clip_and_ema_are_its_trainers(tmp_path, monkeypatch):
    adapter, model = _ultralytics(tmp_path, monkeypatch)
    recipe = adapter.train_recipe(model, RecipeInputs(batch=BATCH, images=64, lr=0.01, num_classes=3))
    params = [p for p in model.parameters() if p.requires_grad]
    for i, p in enumerate(params):
        p.grad = torch.full_like(p, 1.0 + i % 3)
    before = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in params])).item()
    assert before > 10.0
    recipe.clip()
    after = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in params])).item()
    assert after == pytest.approx(10.0, rel=1e-3)  # clip_grad_norm_(max_norm=10): scaled down to 10
    ema_before = {k: v.clone() for k, v in recipe.ema.ema.state_dict().items() if v.dtype.is_floating_point}
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5)
    recipe.ema_update()
    d = 0.9999 * (1 - math.exp(-1 / 2000))  # ModelEMA's decay at its first update
    live = model.state_dict()
    for k, v in recipe.ema.ema.state_dict().items():
        if k in ema_before:
            torch.testing.assert_close(v, d * ema_before[k] + (1 - d) * live[k])


def _libreyolo():
    pytest.importorskip("libreyolo")
    from yoloprof.workloads.families import adapter_of

    return adapter_of("libreyolo")


def _yolo9(adapter):
    return adapter.build(ModelRef(family="libreyolo", name="yolo9", size="t", num_classes=3, seed=0, imgsz=64))


def test_libreyolo_pgi_branch_loss_is_its_trainers():
    adapter = _libreyolo()
    images = torch.randint(0, 255, (BATCH, 3, 64, 64), dtype=torch.uint8)
    targets = torch.tensor([[0, 1, 0.5, 0.5, 0.4, 0.3], [1, 2, 0.3, 0.6, 0.2, 0.2]])
    model = _yolo9(adapter)
    recipe = adapter.train_recipe(model, RecipeInputs(batch=BATCH, images=64, lr=0.5, seed=7, num_classes=3))
    assert recipe.about["aux_weight"] == 0.25 and model.aux is not None
    imgs, padded = adapter.to_device(model, images, targets, torch.device("cpu"))
    ours, _ = adapter.make_loss(model)(model, imgs, padded)
    # the trainer's way, by hand: LibreYOLO9.train() attaches the branch, YOLO9Trainer.on_forward runs it
    from libreyolo.models.yolo9.trainer import YOLO9Trainer

    reference = _yolo9(adapter)
    torch.manual_seed(7)
    reference.enable_aux(weight=YOLO9Trainer._config_class()().aux_weight)
    trainer = type("T", (), {"model": reference})()
    theirs = YOLO9Trainer.on_forward(trainer, imgs, padded)["total_loss"]
    torch.testing.assert_close(ours, theirs)
    reference.disable_aux()  # the branch off: another loss
    assert not torch.allclose(YOLO9Trainer.on_forward(trainer, imgs, padded)["total_loss"], ours)


def test_libreyolo_groups_and_ema_are_its_trainers():
    adapter = _libreyolo()
    model = _yolo9(adapter)
    recipe = adapter.train_recipe(model, RecipeInputs(batch=BATCH, images=64, lr=0.5, num_classes=3))
    # by hand from libreyolo/training/trainer.py _setup_optimizer and YOLO9Config's defaults
    bn_weights, weights, biases = [], [], []
    for _, m in model.named_modules():
        if isinstance(getattr(m, "bias", None), torch.nn.Parameter):
            biases.append(m.bias)
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            bn_weights.append(m.weight)
        elif isinstance(getattr(m, "weight", None), torch.nn.Parameter):
            weights.append(m.weight)
    assert _ids(p for g in recipe.optimizer.param_groups for p in g["params"]) == _ids(model.parameters())
    groups = _groups_by_ids(recipe.optimizer)
    for params, wd in ((bn_weights, 0.0), (weights, 5e-4), (biases, 0.0)):
        g = groups[frozenset(_ids(params))]
        assert (type(recipe.optimizer), g["lr"], g["momentum"], g["nesterov"], g["weight_decay"]) == (
            torch.optim.SGD, 0.01, 0.937, True, wd)
    assert any("aux" in n for n, _ in model.named_parameters())  # the branch's weights are trained too
    assert recipe.clip is None and recipe.optimizer_every == 1  # YOLOv9: no clipping, no nbs
    before = {k: v.clone() for k, v in recipe.ema.ema.state_dict().items() if v.dtype.is_floating_point}
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(1.5)
    recipe.ema_update()
    d = 0.9999 * (1 - math.exp(-1 / 2000))
    live = model.state_dict()
    for k, v in recipe.ema.ema.state_dict().items():
        if k in before:
            torch.testing.assert_close(v, d * before[k] + (1 - d) * live[k])


def test_torchvision_and_builtin_recipes_are_the_documented_sgd():
    pytest.importorskip("torchvision")
    from yoloprof.workloads.families import adapter_of

    tv = adapter_of("torchvision")
    model = tv.build(ModelRef(family="torchvision", name="resnet18", num_classes=3, imgsz=64))
    opt = tv.train_recipe(model, RecipeInputs(batch=BATCH, images=8, lr=0.5)).optimizer
    (g,) = opt.param_groups  # references/classification/train.py: --lr 0.1 --momentum 0.9 --wd 1e-4
    assert (type(opt), g["lr"], g["momentum"], g["weight_decay"], g["nesterov"]) == (torch.optim.SGD, 0.1, 0.9, 1e-4, False)
    builtin = adapter_of("yolo")
    net = builtin.build(ModelRef(family="yolo", name="yolo", size="n", num_classes=3))
    recipe = builtin.train_recipe(net, RecipeInputs(batch=BATCH, images=8, lr=0.05))
    (g,) = recipe.optimizer.param_groups
    assert (g["lr"], g["momentum"], g["nesterov"], g["weight_decay"]) == (0.05, 0.9, True, 0.0)
    assert recipe.clip is None and recipe.ema_update is None and recipe.optimizer_every == 1


def test_absent_parts_are_no_phases():
    ctx = TrainContext(model=None, optimizer=None, forward_loss=None, loader=None, device=None, autocast=None)
    assert ctx.phases == ("dataload", "to_device", "forward", "backward", "optimizer")
    ctx.clip, ctx.ema_update = (lambda: None), (lambda: None)
    assert ctx.phases == ("dataload", "to_device", "forward", "backward", "clip", "optimizer", "ema")


def test_amortised_step_is_a_trainer_iteration_worked_by_hand():
    # 4 iterations of the trainer: 3 without the periodic 1 + 2 + 1 ms, 1 with them: (3 * 6 + 10) / 4
    assert amortised_step_ms(10.0, 4.0, 4) == pytest.approx((3 * 6.0 + 10.0) / 4)
    samples = {"step_ms": [10.0, 12.0], "clip_wall_ms": [1.0, 1.0], "optimizer_wall_ms": [2.0, 4.0],
               "ema_wall_ms": [1.0, 1.0], "forward_wall_ms": [3.0, 3.0]}
    assert add_amortised(samples, 4)["amortised_step_ms"] == pytest.approx([7.0, 7.5])
    assert "amortised_step_ms" not in add_amortised(samples, 1)


def test_summary_says_whose_step_ran_and_its_accumulation():
    import io

    from helpers.profiles import cpu_train_profile
    from yoloprof.profiles.model import measured
    from yoloprof.readers.summary import compute_summary
    from yoloprof.render._out import Out
    from yoloprof.render.terminal import render_summary

    profile = cpu_train_profile()
    profile["train_recipe"] = {"source": "ultralytics BaseTrainer", "optimizer": "AdamW", "optimizer_every": 32,
                               "param_groups": [{"params": 3}, {"params": 2}, {"params": 1}],
                               "clip_max_norm": 10.0, "ema": "ultralytics.utils.torch_utils.ModelEMA"}
    profile["metrics"]["amortised_step_ms"] = measured("amortised_step_ms", [28.5])
    buf = io.StringIO()
    render_summary(compute_summary(profile), out=Out(buf, rich=False))
    line = next(x for x in buf.getvalue().splitlines() if x.startswith("training step:"))
    assert "AdamW (3 parameter group(s))" in line and "clip grad norm 10" in line and "EMA" in line
    assert "every 32 steps" in line and "amortised step 28.5" in line
    del profile["train_recipe"]  # a profile without one (older, or a foreign trace): no line
    buf = io.StringIO()
    render_summary(compute_summary(profile), out=Out(buf, rich=False))
    assert "training step:" not in buf.getvalue()
