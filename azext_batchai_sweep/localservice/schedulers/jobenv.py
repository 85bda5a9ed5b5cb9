"""The environment a job runs with: what a Batch AI node gives its job, never what the service was started with.

A job sees, in this order (a later source wins):

1. a minimal base, the few variables any login on a node has: PATH, HOME, LANG, LANGUAGE, LC_*, TZ, USER,
   LOGNAME and SHELL, taken from the service's own environment when set (PATH falls back to the standard one);
2. the Batch AI variables: AZ_BATCHAI_JOB_NAME, AZ_BATCHAI_JOB_MOUNT_ROOT, AZ_BATCHAI_MOUNT_ROOT,
   AZ_BATCHAI_JOB_TEMP, AZ_BATCHAI_JOB_TEMP_DIR, AZ_BATCHAI_SHARED_JOB_TEMP, AZ_BATCHAI_MPI_HOST_FILE,
   AZ_BATCHAI_STDOUTERR_DIR, AZ_BATCHAI_OUTPUT_<id>, AZ_BATCHAI_INPUT_<id>, and the local service's marker
   BATCHAI_LOCAL_JOB (how crash recovery finds a job's processes); the variables of the job's nodes and of each
   process (master node, host list, task index, TensorFlow's hosts...) come from launcher.py, after these;
3. the job's own environmentVariables, then its secrets.

Nothing else of the shell that ran `local start` reaches a job: no AZURE_* credentials, no AZURE_CONFIG_DIR, no
PYTHONPATH of the extension, no proxy or token variables. Every scheduler of the local service builds a job's
environment here, so they all give the same one.
"""
import os

MARKER_VARIABLE = 'BATCHAI_LOCAL_JOB'
BASE_VARIABLES = ('PATH', 'HOME', 'LANG', 'LANGUAGE', 'TZ', 'USER', 'LOGNAME', 'SHELL')
DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'


def base_environment(source=None):
    """The minimal base of a job's environment, from `source` (default: this process's environment)."""
    source = os.environ if source is None else source
    env = {name: source[name] for name in BASE_VARIABLES if source.get(name)}
    env.update({name: value for name, value in source.items() if name.startswith('LC_')})
    env.setdefault('PATH', DEFAULT_PATH)
    return env


def job_environment(batchai_variables, spec_props, source=None):
    """The whole environment of a job: the base, then the Batch AI variables, then the job's variables and secrets.

    :param batchai_variables: the AZ_BATCHAI_* variables (and the marker) of this job incarnation.
    :param spec_props: the job's create properties as received (environmentVariables and secrets with values).
    """
    env = base_environment(source)
    env.update(batchai_variables)
    for kind in ('environmentVariables', 'secrets'):
        for entry in spec_props.get(kind) or []:
            env[entry['name']] = entry['value']
    return env
