"""Batch AI's multi-node launches through the real az, the same on every scheduler (tests/localservice and
tests/slurm run them): a 2-node TensorFlow job whose processes find each other from TF_CONFIG, a 2-node Caffe2 job
whose processes rendezvous through $AZ_BATCHAI_SHARED_JOB_TEMP, and a 2-node customMpi job the service runs with
mpirun over the host file. Every process prints its Batch AI variables (a line `ENV {...}`), checked against the
shapes of Batch AI's table (documentation/using-batchai-environment-variables.md)."""
import ipaddress
import json
import os
import re
import urllib.request
import uuid

from tests.fixtures_az import service_az

# Each TensorFlow process listens on its own TF_CONFIG address and connects to every other one: it says whom it met.
# A parameter server then waits (as TensorFlow's do) until the service stops it.
TF_SCRIPT = r'''
import json, os, socket, sys, threading, time
config = json.loads(os.environ['TF_CONFIG'])
task = config['task']
me = config['cluster']['worker' if task['type'] == 'master' else task['type']][task['index']]
others = [a for role in config['cluster'].values() for a in role if a != me]
print('ENV', json.dumps({k: v for k, v in os.environ.items() if k.startswith('AZ_BATCH') or k == 'TF_CONFIG'}))
print('args', ' '.join(sys.argv[1:]))
print('node', os.environ.get('SLURMD_NODENAME', 'this machine'))
host, port = me.rsplit(':', 1)
server = socket.create_server((host, int(port)))
met = []
def accept():
    while len(met) < len(others):
        conn, _ = server.accept()
        met.append(conn.recv(100).decode())
        conn.close()
threading.Thread(target=accept, daemon=True).start()
deadline = time.time() + 60
for address in others:
    h, p = address.rsplit(':', 1)
    while True:
        try:
            with socket.create_connection((h, int(p)), timeout=2) as s:
                s.sendall(me.encode())
            break
        except OSError:
            assert time.time() < deadline, 'no answer from ' + address
            time.sleep(0.1)
while len(met) < len(others):
    assert time.time() < deadline, 'met only {}'.format(met)
    time.sleep(0.05)
print(task['type'], task['index'], 'at', me, 'met', ','.join(sorted(met)), flush=True)
if task['type'] == 'ps':
    time.sleep(600)
'''

# Caffe2's file store rendezvous: each shard writes its file into the shared job temp, then waits for all of them.
CAFFE2_SCRIPT = r'''
import argparse, json, os, sys, time
parser = argparse.ArgumentParser()
parser.add_argument('--shard_id', type=int)
parser.add_argument('--num_shards', type=int)
parser.add_argument('--file_store_path')
args = parser.parse_args()
print('ENV', json.dumps({k: v for k, v in os.environ.items() if k.startswith('AZ_BATCH')}))
print('node', os.environ.get('SLURMD_NODENAME', 'this machine'))
with open(os.path.join(args.file_store_path, 'shard-{}'.format(args.shard_id)), 'w') as f:
    f.write(str(os.getpid()))
deadline = time.time() + 60
while len([n for n in os.listdir(args.file_store_path) if n.startswith('shard-')]) < args.num_shards:
    assert time.time() < deadline, 'the other shards never came'
    time.sleep(0.05)
print('shard', args.shard_id, 'of', args.num_shards, 'saw all shards', flush=True)
print('shard', args.shard_id, 'done', file=sys.stderr)
'''

# One rank of an MPI job: its rank, the world's size, its Batch AI variables.
MPI_SCRIPT = r'''
import json, os
print('ENV', json.dumps({k: v for k, v in os.environ.items() if k.startswith('AZ_BATCH')}))
print('rank', os.environ['OMPI_COMM_WORLD_RANK'], 'of', os.environ['OMPI_COMM_WORLD_SIZE'],
      'task', os.environ['AZ_BATCHAI_TASK_INDEX'], 'node', os.environ.get('SLURMD_NODENAME', 'this machine'),
      flush=True)
'''

MOUNT = {'azureFileShares': [{'azureFileUrl': 'https://<AZURE_BATCHAI_STORAGE_ACCOUNT>.file.core.windows.net/logs',
                              'relativeMountPath': 'logs'}]}
SCRIPTS = '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs/scripts/'
ACCOUNT = 'acct'


def job_files(nodes=2):
    """{job name: the job.json `az batchai job create -f` takes}."""
    base = {'nodeCount': nodes, 'stdOutErrPathPrefix': '$AZ_BATCHAI_JOB_MOUNT_ROOT/logs', 'mountVolumes': MOUNT}
    tf_args = ('--ps_hosts=$AZ_BATCHAI_PS_HOSTS --worker_hosts=$AZ_BATCHAI_WORKER_HOSTS '
               '--task_index=$AZ_BATCHAI_TASK_INDEX')
    return {
        'tf': {'properties': {**base, 'tensorFlowSettings': {
            'pythonScriptFilePath': SCRIPTS + 'tf.py', 'workerCount': 2, 'parameterServerCount': 1,
            'masterCommandLineArgs': '--job_name=master ' + tf_args,
            'workerCommandLineArgs': '--job_name=worker ' + tf_args,
            'parameterServerCommandLineArgs': '--job_name=ps ' + tf_args}}},
        'caffe2': {'properties': {**base, 'caffe2Settings': {
            'pythonScriptFilePath': SCRIPTS + 'caffe2.py',
            'commandLineArgs': '--num_shards 2 --shard_id $AZ_BATCHAI_TASK_INDEX '
                               '--file_store_path $AZ_BATCHAI_SHARED_JOB_TEMP'}}},
        'mpi': {'properties': {**base, 'customMpiSettings': {
            'commandLine': 'python3 {}mpi.py'.format(SCRIPTS), 'processCount': 2}}},
    }


def write_scripts(data_dir):
    scripts = os.path.join(data_dir, 'storage', ACCOUNT, 'shares', 'logs', 'scripts')
    os.makedirs(scripts, exist_ok=True)
    for name, text in (('tf.py', TF_SCRIPT), ('caffe2.py', CAFFE2_SCRIPT), ('mpi.py', MPI_SCRIPT)):
        with open(os.path.join(scripts, name), 'w', encoding='utf-8') as f:
            f.write(text)


def create_jobs(az, directory, group, experiment, cluster):
    """Create the three jobs through az (Batch AI's `job create -f job.json`); their names."""
    assert az('batchai', 'experiment', 'create', *group, '-n', experiment, '-o', 'none').exit_code == 0
    for name, job in job_files().items():
        path = os.path.join(directory, name + '.json')
        with open(path, 'w', encoding='utf-8') as f:
            json.dump(job, f)
        created = az('batchai', 'job', 'create', *group, '-e', experiment, '-n', name, '-c', cluster, '-f', path,
                     '--storage-account-name', ACCOUNT, '-o', 'none')
        assert created.exit_code == 0, created.stderr[-3000:]
    return list(job_files())


def outputs(az, group, experiment, job, streamed):
    """{file name: text} of the job's stdouterr files: `az batchai job file stream` of `streamed` (it follows the
    file until the job ends), then `az batchai job file list` and each listed file from its download URL."""
    followed = az('batchai', 'job', 'file', 'stream', *group, '-e', experiment, '-j', job, '-f', streamed,
                  timeout=180)
    assert followed.exit_code == 0, followed.stderr[-3000:]
    files = az('batchai', 'job', 'file', 'list', *group, '-e', experiment, '-j', job, '-d', 'stdouterr', '-o',
               'json')
    assert files.exit_code == 0, files.stderr[-3000:]
    texts = {}
    for item in files.json():
        with urllib.request.urlopen(item['downloadUrl']) as response:
            texts[item['name']] = response.read().decode()
    assert texts[streamed] == followed.stdout
    return texts


def env_lines(text):
    return [json.loads(line[4:]) for line in text.splitlines() if line.startswith('ENV ')]


def check_variables(env, index, tensorflow=False):
    """Every variable of Batch AI's table in the shape its table documents, for the process of task `index`."""
    for name in ('AZ_BATCHAI_MOUNT_ROOT', 'AZ_BATCHAI_JOB_MOUNT_ROOT', 'AZ_BATCHAI_JOB_TEMP',
                 'AZ_BATCHAI_JOB_TEMP_DIR', 'AZ_BATCHAI_SHARED_JOB_TEMP', 'AZ_BATCHAI_STDOUTERR_DIR'):
        assert os.path.isabs(env[name]) and os.path.isdir(env[name]), (name, env.get(name))
    assert env['AZ_BATCHAI_JOB_TEMP'].startswith(env['AZ_BATCHAI_JOB_TEMP_DIR'].rstrip('/') + '/')
    assert env['AZ_BATCHAI_SHARED_JOB_TEMP'].endswith('/shared')
    assert env['AZ_BATCHAI_STDOUTERR_DIR'].endswith('/stdouterr')
    with open(env['AZ_BATCHAI_MPI_HOST_FILE'], encoding='utf-8') as f:
        hosts = f.read().splitlines()
    assert hosts and all(re.fullmatch(r'\S+ slots=\d+', line) for line in hosts), hosts
    assert re.fullmatch(r'\d+', env['AZ_BATCHAI_NUM_GPUS'])
    assert env['AZ_BATCHAI_TASK_INDEX'] == str(index)
    assert env['AZ_BATCHAI_MPI_MASTER_NODE'] == hosts[0].split()[0]
    ipaddress.ip_address(env['AZ_BATCHAI_JOB_MASTER_NODE_IP'])
    assert env['AZ_BATCH_HOST_LIST'].split(',')[0] == env['AZ_BATCHAI_MPI_MASTER_NODE']
    if tensorflow:
        hosts_pattern = r'[^,:\s]+:\d+(,[^,:\s]+:\d+)*'
        assert re.fullmatch(hosts_pattern, env['AZ_BATCHAI_PS_HOSTS'])
        assert re.fullmatch(hosts_pattern, env['AZ_BATCHAI_WORKER_HOSTS'])
        config = json.loads(env['TF_CONFIG'])
        assert config['cluster'] == {'ps': env['AZ_BATCHAI_PS_HOSTS'].split(','),
                                     'worker': env['AZ_BATCHAI_WORKER_HOSTS'].split(',')}
        assert config['environment'] == 'cloud' and config['task']['index'] == index
    else:
        assert 'TF_CONFIG' not in env and 'AZ_BATCHAI_PS_HOSTS' not in env


def nodes_of(text):
    """The nodes a job's output says its processes ran on (Slurm's node names; 'this machine' elsewhere)."""
    return [line.split(' ', 1)[1] for line in text.splitlines() if line.startswith('node ')]


def check_launches(az, group, experiment):
    """The three jobs' processes, outputs and variables as Batch AI gave them (`outputs` waits for each job). Returns
    {name: output} of the TensorFlow job's files, the Caffe2 job's and the MPI job's stdout."""
    # TensorFlow: master (worker 0), worker 1 and a parameter server, each with its own files, all met each other.
    tf_out = outputs(az, group, experiment, 'tf', 'stdout-wk-0.txt')
    assert {'stdout-wk-0.txt', 'stderr-wk-0.txt', 'stdout-wk-1.txt', 'stderr-wk-1.txt', 'stdout-ps-0.txt',
            'stderr-ps-0.txt'} <= set(tf_out), sorted(tf_out)
    members = json.loads(env_lines(tf_out['stdout-wk-0.txt'])[0]['TF_CONFIG'])['cluster']
    everyone = set(members['ps'] + members['worker'])
    for name, (task, index) in {'stdout-wk-0.txt': ('master', 0), 'stdout-wk-1.txt': ('worker', 1),
                                'stdout-ps-0.txt': ('ps', 0)}.items():
        [env] = env_lines(tf_out[name])
        check_variables(env, index, tensorflow=True)
        assert json.loads(env['TF_CONFIG'])['task'] == {'type': task, 'index': index}
        [line] = [x for x in tf_out[name].splitlines() if ' met ' in x]
        me = line.split()[3]
        assert line.startswith('{} {} at'.format(task, index))
        assert set(line.split()[5].split(',')) == everyone - {me}, line
        assert '--job_name={} '.format(task) in tf_out[name] and '--task_index={}'.format(index) in tf_out[name]
    # Caffe2: one process per node, its index as shard id, files named per node (the recipe waits on stderr-1.txt).
    caffe2 = outputs(az, group, experiment, 'caffe2', 'stderr-1.txt')
    for index in (0, 1):
        out = tf_out['caffe2 stdout-{}.txt'.format(index)] = caffe2['stdout-{}.txt'.format(index)]
        assert 'shard {} of 2 saw all shards'.format(index) in out
        check_variables(env_lines(out)[0], index)
        assert caffe2['stderr-{}.txt'.format(index)] == 'shard {} done\n'.format(index)
    # customMpi: one mpirun over the host file, from the master: both ranks write the job's stdout.txt.
    out = tf_out['mpi stdout.txt'] = outputs(az, group, experiment, 'mpi', 'stdout.txt')['stdout.txt']
    ranks = sorted(line.split(' node ')[0] for line in out.splitlines() if line.startswith('rank'))
    assert ranks == ['rank 0 of 2 task 0', 'rank 1 of 2 task 1'], out
    envs = sorted(env_lines(out), key=lambda e: e['AZ_BATCHAI_TASK_INDEX'])
    for index, env in enumerate(envs):
        check_variables(env, index)
    states = az('batchai', 'job', 'list', *group, '-e', experiment, '--query', '[].[name, executionState]', '-o',
                'json')
    assert sorted(states.json()) == [['caffe2', 'succeeded'], ['mpi', 'succeeded'], ['tf', 'succeeded']], \
        states.stderr
    return tf_out


def launch_through_az(service, directory):
    """Create the three jobs on `service` through az, check their launches; (az, group, outputs of check_launches)."""
    az = service_az(service, directory)
    group = ['-g', service.resource_group, '-w', service.workspace]
    write_scripts(service.data_dir)
    experiment = 'launch-' + uuid.uuid4().hex[:6]
    create_jobs(az, directory, group, experiment, service.cluster)
    return az, group, experiment, check_launches(az, group, experiment)
