"""The compiled extension; everything else about the build is in pyproject.toml.

``kustodian.policy.capacity._native`` (``_native.pyx``) is where the capacity planner's hot
loops are to move: Cython, so that they stay Python-like code next to the pure-Python planner,
which imports the module with a fallback when it is missing. setuptools' ``build_ext`` is
Cython's own when Cython is installed (``[build-system] requires``): it turns the ``.pyx``
into C first.

Declared here, not in pyproject.toml's ``[tool.setuptools] ext-modules``: that table works, but
setuptools calls it experimental ("likely to change") and warns about it on every build.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kustodian.policy.capacity._native",
            ["kustodian/policy/capacity/_native.pyx"],
            # included by ``_native.pyx`` (the one AC parse, compiled in): a change rebuilds
            depends=["kustodian/policy/capacity/reading.py"],
            # optional: a machine without a C compiler or Python's headers still installs
            # (setuptools warns and goes on), with the pure-Python planner.
            optional=True,
            # after the interpreter's own flags, so it wins: Debian's python3 says -O2, a
            # pyenv build -O3; one level everywhere, with gcc's loop vectorisation.
            extra_compile_args=["-O3"],
        ),
    ],
)
