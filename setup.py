"""Build the one compiled part of connote: METEOR's alignment of many sentence pairs (plain C, no
dependencies). It is optional: where no C compiler is found the install goes on and METEOR uses its
pure-Python search (same numbers, slower)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "connote.metrics.meteor._calign",
            ["src/connote/metrics/meteor/_calign.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
