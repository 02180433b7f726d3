"""Ship the repository's top-level `conf/` and `sweeps/` inside the package.

The design card keeps the Hydra config and the experiment files at the top of the repository; an
installed wheel must still find them (`yoloprof sweep +sweep=demo` from any folder), so the build
copies them to `yoloprof/conf` and `yoloprof/sweeps`, where `yoloprof.config.paths` looks first.
An editable install needs no copy: `paths` falls back to the checkout's own folders.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_DIRS = ("conf", "sweeps")


class BuildPyWithConf(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # pip install -e: paths.py reads the checkout directly
            return
        root = Path(__file__).resolve().parent
        for name in DATA_DIRS:
            for src in sorted((root / name).rglob("*.yaml")):
                dst = Path(self.build_lib, "yoloprof", name, src.relative_to(root / name))
                self.mkpath(str(dst.parent))
                self.copy_file(str(src), str(dst))


setup(cmdclass={"build_py": BuildPyWithConf})
