from setuptools import setup

setup(cffi_modules=["csrc/ffibuild.py:ffibuilder"])
