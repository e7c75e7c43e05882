"""Builds the pto_tune package from the project's CMake build tree: configures and builds
the _pto_tune target in $PTO_TUNE_BUILD_DIR (default: ../build, the README's build
folder) and installs <build>/python/pto_tune as is. Offline on Debian:

    pip install --no-build-isolation ./python
"""

import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("PTO_TUNE_BUILD_DIR", os.path.join(ROOT, "build"))


class BuildWithCMake(build_ext):
    def run(self):
        subprocess.check_call(["cmake", "-S", ROOT, "-B", BUILD, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                               f"-DPython3_EXECUTABLE={sys.executable}"])
        subprocess.check_call(["cmake", "--build", BUILD, "--target", "_pto_tune"])
        target = os.path.join(self.build_lib, "pto_tune")
        shutil.copytree(os.path.join(BUILD, "python", "pto_tune"), target, dirs_exist_ok=True)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # the extension and the worker are built for this machine
        return True


setup(packages=[], cmdclass={"build_ext": BuildWithCMake}, distclass=BinaryDistribution)
