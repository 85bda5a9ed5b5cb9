"""What `make demo` runs: a short tour of `az batchai sweep`, echoing every command before running it.

For now it plans the example sweep (examples/sweep.yaml: the Batch AI Chainer recipe, 9 jobs) offline. It uses the
az of this repo's venv, which loads the extension from source (AZURE_EXTENSION_DEV_SOURCES, set by the Makefile).
"""
import os
import shlex
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(REPO, 'demo-output')
AZ = os.path.join(os.path.dirname(sys.executable), 'az')


def run(*args):
    print('\n$ ' + ' '.join(shlex.quote(a) for a in ['az', *args]), flush=True)
    subprocess.run([AZ, *args], cwd=OUTPUT, check=True)


def main():
    os.makedirs(OUTPUT, exist_ok=True)
    spec = os.path.relpath(os.path.join(REPO, 'examples', 'sweep.yaml'), OUTPUT)
    print('# Plan a 9-job grid over two hyperparameters of the Batch AI Chainer recipe. Nothing is submitted:')
    print('# the plan file holds every job definition, one per line.')
    run('batchai', 'sweep', 'create', '-g', 'batchai.recipes', '-w', 'recipe_workspace', '-e', 'chainer_experiment',
        '-n', 'mnist', '--spec', spec, '-c', 'nc6', '--storage-account-name', 'demostorage', '-o', 'table')
    print('\n# The same sweep as a random search of 4 jobs; the seed makes it repeatable. --query picks fields.')
    run('batchai', 'sweep', 'create', '-g', 'batchai.recipes', '-w', 'recipe_workspace', '-e', 'chainer_experiment',
        '-n', 'mnist-random', '--spec', spec, '--storage-account-name', 'demostorage', '-c', 'nc6',
        '--sampling', 'random', '--count', '4', '--seed', '7',
        '--query', '{jobs: jobCount, seed: seed, plan: planFile}')
    print('\n# The plan files are in {}.'.format(OUTPUT))


if __name__ == '__main__':
    try:
        main()
    except subprocess.CalledProcessError as ex:
        sys.exit(ex.returncode)
