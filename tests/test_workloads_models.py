"""Model and loss factories: built-in, user modules from the cwd, weights loading, generic loss."""

from __future__ import annotations


import pytest
import torch

from yoloprof.errors import UsageError
from yoloprof.workloads.loss import DetectionLoss
from yoloprof.workloads.family_builtin import BUILTIN, FACTORY
from yoloprof.workloads.families import user_loss
from yoloprof.workloads.models import build_model, generic_loss, is_builtin


def test_builtin_model_and_loss():
    assert is_builtin("yolo") and not is_builtin("pkg.Net")
    model = build_model("yolo", "t", num_classes=5, seed=1)
    assert model.num_classes == 5 and model.size == "t"
    x, targets = torch.rand(1, 3, 64, 64), torch.tensor([[0, 1, 0.5, 0.5, 0.2, 0.2]])
    loss, _ = BUILTIN.make_loss(model)(model, x, targets)
    assert loss.item() == pytest.approx(DetectionLoss(5)(model(x), targets)[0].item())
    with pytest.raises(UsageError, match="unknown size 'xl'"):
        build_model("yolo", "xl")


def test_user_model_from_the_working_directory(user_project):
    model = build_model("ymods_user.Net", kwargs={"width": 4, "heads": 3}, seed=5)
    again = build_model("ymods_user.Net", kwargs={"width": 4, "heads": 3}, seed=5)
    assert model.fc.out_features == 3 and torch.equal(model.conv.weight, again.conv.weight)
    x = torch.rand(2, 3, 32, 32)
    out = model(x)
    loss, parts = FACTORY.make_loss(model)(model, x, torch.zeros((0, 6)))
    expected = out["logits"].mean() + out["feats"].mean()  # the long tensor is not part of it
    assert loss.item() == pytest.approx(expected.item()) and parts == {}
    loss.backward()
    assert model.conv.weight.grad is not None


def test_user_loss_factory(user_project):
    model = build_model("ymods_user.Net")
    x = torch.rand(2, 3, 16, 16)
    out = model(x)
    loss, parts = user_loss(model, "ymods_user.make_loss")(model, x, torch.zeros((0, 6)))
    assert loss.item() == pytest.approx(out["logits"].pow(2).mean().item()) and parts == {}


@pytest.mark.parametrize("target, match", [
    ("ymods_missing.Net", "cannot import 'ymods_missing.Net'"),
    ("ymods_user.Nope", "has no attribute 'Nope'"),
    ("NoDots", "dotted path"),
    ("ymods_user.bad_factory", "returned int, not a torch.nn.Module"),
    ("ymods_user.broken", "RuntimeError: boom"),
])
def test_user_model_errors_name_the_target(user_project, target, match):
    with pytest.raises(UsageError, match=match):
        build_model(target)


def test_user_model_bad_kwargs(user_project):
    with pytest.raises(UsageError, match="calling ymods_user.Net"):
        build_model("ymods_user.Net", kwargs={"depth": 3})


def test_generic_loss_reduces_any_structure():
    a, b = torch.tensor([1.0, 3.0]), torch.tensor([[2.0, 4.0], [6.0, 8.0]])
    assert generic_loss(a).item() == 2.0
    assert generic_loss((a, [b], {"x": torch.ones(3, dtype=torch.int64)})).item() == pytest.approx(2.0 + 5.0)
    with pytest.raises(UsageError, match="no floating-point tensor"):
        generic_loss({"ids": torch.ones(2, dtype=torch.long)})


def test_weights_roundtrip(tmp_path):
    source = build_model("yolo", "n", num_classes=3, seed=1)
    path = tmp_path / "w.pt"
    torch.save(source.state_dict(), path)
    loaded = build_model("yolo", "n", num_classes=3, seed=2, weights=str(path))
    assert all(torch.equal(v, loaded.state_dict()[k]) for k, v in source.state_dict().items())
    torch.save({"state_dict": source.state_dict(), "epoch": 3}, tmp_path / "ckpt.pt")
    wrapped = build_model("yolo", "n", num_classes=3, seed=2, weights=str(tmp_path / "ckpt.pt"))
    assert torch.equal(wrapped.stem.conv.weight, source.stem.conv.weight)


def test_weights_shape_mismatch_names_the_key(tmp_path):
    path = tmp_path / "w.pt"
    saved = build_model("yolo", "n", num_classes=3).state_dict()
    torch.save(saved, path)
    wanted = build_model("yolo", "n", num_classes=80).state_dict()
    first = next(k for k, v in wanted.items() if v.shape != saved[k].shape)
    with pytest.raises(UsageError, match=rf"key '{first}' has shape {list(saved[first].shape)}".replace("[", r"\[")):
        build_model("yolo", "n", num_classes=80, weights=str(path))


def test_weights_missing_and_unexpected_keys(tmp_path):
    state = build_model("yolo", "n", num_classes=3).state_dict()
    first = next(iter(state))
    missing = {k: v for k, v in state.items() if k != first}
    torch.save(missing, tmp_path / "missing.pt")
    with pytest.raises(UsageError, match=f"missing key '{first}'"):
        build_model("yolo", "n", num_classes=3, weights=str(tmp_path / "missing.pt"))
    torch.save({**state, "extra.weight": torch.zeros(1)}, tmp_path / "extra.pt")
    with pytest.raises(UsageError, match="unexpected key 'extra.weight'"):
        build_model("yolo", "n", num_classes=3, weights=str(tmp_path / "extra.pt"))


class Opaque:
    """Pickled as a class instance: weights_only=True must refuse it."""


def test_not_a_state_dict(tmp_path):
    torch.save([torch.zeros(2)], tmp_path / "list.pt")
    torch.save(Opaque(), tmp_path / "obj.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a torch file at all")
    for name in ("list.pt", "obj.pt", "junk.pt"):
        with pytest.raises(UsageError, match="not a state dict") as err:
            build_model("yolo", "n", weights=str(tmp_path / name))
        assert "\n" not in str(err.value)
    with pytest.raises(UsageError, match="does not exist"):
        build_model("yolo", "n", weights=str(tmp_path / "none.pt"))
