#!/usr/bin/env python
"""Packaging for the azext-batchai-sweep Azure CLI extension.

No install_requires on purpose: everything the extension imports at run time (azure-mgmt-batchai,
azure-storage-blob, azure-storage-file-share, azure-core, knack, PyYAML) ships with azure-cli, and az's
own pins decide their versions. That is also what lets the wheel install offline with
`az extension add --source dist/<wheel> -y`.

The extra `utilities` is for notebooks that use the drop-in `azext_batchai_sweep.utilities` (the old Batch AI
Utilities API) outside az: `pip install "batchai_sweep-<version>-py3-none-any.whl[utilities]"` brings the SDKs the
old package needed, with lower bounds only (7.0.0b1 is the Batch AI SDK az ships; az's pins decide inside az).
"""
from setuptools import setup, find_packages

VERSION = '0.10.4'

CLASSIFIERS = [
    'Development Status :: 4 - Beta',
    'Intended Audience :: Developers',
    'Intended Audience :: System Administrators',
    'Programming Language :: Python',
    'Programming Language :: Python :: 3',
    'Programming Language :: Python :: 3.10',
    'Programming Language :: Python :: 3.11',
    'Programming Language :: Python :: 3.12',
    'License :: OSI Approved :: MIT License',
]

with open('README.md', 'r', encoding='utf-8') as f:
    README = f.read()
with open('HISTORY.rst', 'r', encoding='utf-8') as f:
    HISTORY = f.read()

setup(
    name='batchai-sweep',
    version=VERSION,
    description='Hyperparameter sweeps as az commands: plan, submit, run steered by results (early termination, '
                'Hyperband, ASHA, Bayesian), status, metrics, report; on Batch AI, a local service or Slurm.',
    long_description=README + '\n\n' + HISTORY,
    long_description_content_type='text/markdown',
    license='MIT',
    author='azext-batchai-sweep developers',
    url='https://github.com/azext-batchai-sweep/azext-batchai-sweep',
    classifiers=CLASSIFIERS,
    packages=find_packages(exclude=['tests', 'tests.*', 'bench', 'bench.*']),
    install_requires=[],
    extras_require={
        'utilities': [
            'azure-mgmt-batchai>=7.0.0b1',
            'azure-storage-blob>=12.0.0',
            'azure-storage-file-share>=12.0.0',
            'azure-mgmt-storage>=20.0.0',  # convert_job_to_jcp reads storage keys on Azure, as the old code did
            'six',  # azure-mgmt-batchai 7.0.0b1 imports it without declaring it (azure-cli brings it)
            'msrest',  # azure-mgmt-batchai 7.0.0 (the newest) imports it without declaring it
        ],
    },
    package_data={'azext_batchai_sweep': ['azext_metadata.json', 'core/spec/schemas/*.json']},
    python_requires='>=3.9',
)
