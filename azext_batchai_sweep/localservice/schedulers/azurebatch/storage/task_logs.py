"""Batch's own stdout.txt/stderr.txt of every task copied to a Blob container by Batch itself (the task's
`outputFiles`, uploaded at task completion whatever its result), and read back from there with az's token
(issue 31 rule 3: a failure before the node wrapper or the mount works stays readable, after the node is gone).

Where: the container CONTAINER of the cluster's storage account (mounts.logs_account: the first, by name, of the storage
accounts its nodeSetup.mountVolumes mount; a cluster without a mount has no outputFiles), blob
`<task id>/stdout.txt` and `<task id>/stderr.txt` (tasks.output_files, in ../tasks.py).

How the node may write there without a key on disk: a **user delegation SAS**. The service asks the account's Blob
service for a user delegation key with az's storage token (Get User Delegation Key; az's login needs Storage Blob
Data Contributor there: roles.TASK_LOGS_ROLE, checked at `cluster create` and `local start`), creates the
container if it is missing (once per account and service run), and signs a container SAS that allows create and
write only (no read, list or delete), over https only, valid from 15 minutes ago (clock skew) until the task's
maxWallClockTime plus QUEUE_MARGIN_SECONDS (a task may wait for a node before it runs), at most until the key
expires. The SAS goes into the task body sent to Batch and nowhere else: never into the store, a log, an
exception or a job's environment (what fails is logged by status and error code only).

A user delegation key lives at most 7 days: one is asked for 7 days and reused while it outlives what a new task
needs; for tasks that need longer (Batch AI's default maxWallClockTime is 150 days) a fresh key is asked at most
once an hour, and their SAS ends with it: such a task still running 7 days after its submission loses only this
copy (Batch's upload fails; states.outcome does not count that as the job's failure). The wrapper's own logs on a
mounted share and the task file API are unaffected.

The signing is azure-storage-blob's (`generate_container_sas` with `user_delegation_key`), which azure-cli ships;
the calls are its BlobServiceClient with az's token (a TokenCredential), imported lazily.
"""
import datetime
import logging
import threading
import time
from urllib.parse import quote, urlsplit

from ..auth import LoginError
from .mounts import blob_endpoint, logs_account
from .rest import STORAGE_RESOURCE
from .roles import TASK_LOGS_ROLE, missing_role_hint

logger = logging.getLogger(__name__)

# One container per storage account for every cluster and task of the service (a task id is unique: names.py).
CONTAINER = 'batchai-sweep-task-logs'
KEY_LIFETIME_SECONDS = 7 * 24 * 3600 - 300  # a user delegation key may live at most 7 days
KEY_RENEW_SECONDS = 3600  # a key younger than this is never replaced (tasks longer than a key: one per hour)
QUEUE_MARGIN_SECONDS = 24 * 3600  # how long a task may wait for a node, beyond its maxWallClockTime
CLOCK_SKEW_SECONDS = 15 * 60  # key and SAS start this long ago (the storage service's clock may be behind)
RETRY_AFTER_FAILURE_SECONDS = 300  # an account that refused is asked again after this long (tasks go without)
SAS_PERMISSIONS = {'create': True, 'write': True}  # nothing else: the node cannot read, list or delete


def _utc(seconds):
    return datetime.datetime.fromtimestamp(int(seconds), datetime.timezone.utc)


def failure_words(ex):
    """What failed, without any URL, token or SAS: the status and storage error code, or the exception's type."""
    status = getattr(ex, 'status_code', None)
    code = getattr(ex, 'error_code', None)
    if status is None and code is None:
        return type(ex).__name__ if not isinstance(ex, LoginError) else str(ex)
    return ' '.join(str(p) for p in (status, code) if p)


class TaskLogs:
    """The task-log container of each cluster's storage: `container_url` (a write-only SAS URL for a task body) and
    `read` (a blob of it, with az's token).

    `credential`: a TokenCredential for the storage resource (default: az's login, asked lazily);
    `endpoint(account, cluster_props)`: the account's Blob service URL (default mounts.blob_endpoint);
    `connection_verify`: a CA bundle (tests); `clock`: epoch seconds."""

    def __init__(self, credential=None, endpoint=None, connection_verify=None, clock=time.time):
        if credential is None:
            from ..auth import az_credential  # pylint: disable=import-outside-toplevel
            credential = az_credential(STORAGE_RESOURCE)
        self._credential = credential
        self._endpoint = endpoint or blob_endpoint
        self._verify = connection_verify
        self._clock = clock
        self._lock = threading.Lock()
        self._clients = {}  # Blob service URL -> BlobServiceClient
        self._keys = {}  # Blob service URL -> (UserDelegationKey, its expiry, when it was asked)
        self._containers = set()  # Blob service URLs whose container exists
        self._failed_until = {}  # Blob service URL -> when to ask again
        self._warned = set()
        self.keys_asked = 0

    def _client(self, base):
        if base not in self._clients:
            from azure.storage.blob import BlobServiceClient  # pylint: disable=import-outside-toplevel
            kwargs = {} if self._verify is None else {'connection_verify': self._verify}
            # Few retries and short timeouts: a storage account that does not answer must not hold up task adds.
            self._clients[base] = BlobServiceClient(base, credential=self._credential, retry_total=1,
                                                    connection_timeout=10, read_timeout=30, **kwargs)
        return self._clients[base]

    def container_url(self, cluster_props, wall_clock_seconds):
        """`<container URL>?<SAS>` where Batch may create and write the cluster's task logs until the task's
        wall clock (plus the queue margin) has passed, or None: no storage mounted, or the storage refused
        (warned once per account and cause; asked again after RETRY_AFTER_FAILURE_SECONDS)."""
        account = logs_account(cluster_props)
        if account is None:
            return None
        base = self._endpoint(account, cluster_props).rstrip('/')
        now = self._clock()
        with self._lock:
            if now < self._failed_until.get(base, 0):
                return None
            try:
                key, key_expiry = self._key(base, now, wall_clock_seconds + QUEUE_MARGIN_SECONDS)
                self._ensure_container(base)
                sas = self._sign(account, key, now, min(now + wall_clock_seconds + QUEUE_MARGIN_SECONDS,
                                                        key_expiry))
            except Exception as ex:  # pylint: disable=broad-except
                # (azure-core's errors, az's login, a DNS failure...: each logged by its kind only)
                self._failed_until[base] = now + RETRY_AFTER_FAILURE_SECONDS
                self._warn(account, 'uploading the tasks\' own stdout/stderr there (outputFiles) is off for '
                           'now', ex)
                return None
        return '{}/{}?{}'.format(base, CONTAINER, sas)

    def readable_url(self, cluster_props, blob, path, wall_clock_seconds):
        """`<blob URL>?<SAS>` of blob ``blob`` of the cluster's task-log container, uploaded from the file ``path``
        unless it is there (its name says its content: code_files.py), readable (read only) until the task's wall
        clock plus the queue margin has passed. Raises what the storage answered (the job cannot run without it).
        """
        account = logs_account(cluster_props)
        if account is None:
            raise LookupError('the cluster mounts no storage account to hand the file to Batch through')
        base = self._endpoint(account, cluster_props).rstrip('/')
        now = self._clock()
        from azure.core.exceptions import ResourceNotFoundError  # pylint: disable=import-outside-toplevel
        with self._lock:
            key, key_expiry = self._key(base, now, wall_clock_seconds + QUEUE_MARGIN_SECONDS)
            self._ensure_container(base)
            client = self._client(base).get_blob_client(CONTAINER, blob)
            try:
                client.get_blob_properties()
            except ResourceNotFoundError:
                with open(path, 'rb') as f:
                    client.upload_blob(f, overwrite=True)
                logger.info('uploaded %s to container %s of %s', blob, CONTAINER, base)
            from azure.storage.blob import BlobSasPermissions, generate_blob_sas  # pylint: disable=C0415
            sas = generate_blob_sas(account, CONTAINER, blob, user_delegation_key=key,
                                    permission=BlobSasPermissions(read=True), start=_utc(now - CLOCK_SKEW_SECONDS),
                                    expiry=_utc(min(now + wall_clock_seconds + QUEUE_MARGIN_SECONDS, key_expiry)),
                                    protocol='https')
        return '{}/{}/{}?{}'.format(base, CONTAINER, quote(blob), sas)

    def _key(self, base, now, needed):
        """(user delegation key, its expiry) covering ``needed`` seconds from now, or the longest one allowed."""
        key, expiry, asked = self._keys.get(base, (None, 0, 0))
        if key is not None and (expiry >= now + needed or now - asked < KEY_RENEW_SECONDS) and expiry > now + 60:
            return key, expiry
        expiry = now + KEY_LIFETIME_SECONDS
        key = self._client(base).get_user_delegation_key(_utc(now - CLOCK_SKEW_SECONDS), _utc(expiry))
        self.keys_asked += 1
        self._keys[base] = (key, expiry, now)
        logger.info('got a user delegation key of %s for the task logs (valid until %s UTC)', base,
                    _utc(expiry).strftime('%Y-%m-%d %H:%M'))
        return key, expiry

    def _ensure_container(self, base):
        if base in self._containers:
            return
        from azure.core.exceptions import ResourceExistsError  # pylint: disable=import-outside-toplevel
        try:
            self._client(base).create_container(CONTAINER)
            logger.info('created container %s of %s for the tasks\' own stdout/stderr', CONTAINER, base)
        except ResourceExistsError:
            pass
        self._containers.add(base)

    @staticmethod
    def _sign(account, key, now, expiry):
        # pylint: disable=import-outside-toplevel
        from azure.storage.blob import ContainerSasPermissions, generate_container_sas
        return generate_container_sas(account, CONTAINER, user_delegation_key=key,
                                      permission=ContainerSasPermissions(**SAS_PERMISSIONS),
                                      start=_utc(now - CLOCK_SKEW_SECONDS), expiry=_utc(expiry), protocol='https')

    def read(self, cluster_props, blob):
        """The bytes of blob ``blob`` of the cluster's task-log container, or None (no storage mounted, no such
        blob, or the storage refused: warned once per account and cause)."""
        account = logs_account(cluster_props)
        if account is None:
            return None
        base = self._endpoint(account, cluster_props).rstrip('/')
        from azure.core.exceptions import ResourceNotFoundError  # pylint: disable=import-outside-toplevel
        try:
            with self._lock:
                client = self._client(base).get_blob_client(CONTAINER, blob)
            return client.download_blob().readall()
        except ResourceNotFoundError:
            return None
        except Exception as ex:  # pylint: disable=broad-except
            self._warn(account, 'reading the tasks\' own stdout/stderr from there failed', ex)
            return None

    def _warn(self, account, what, ex):
        why = failure_words(ex)
        if (account, what, why) in self._warned:
            return
        self._warned.add((account, what, why))
        hint = ''
        if str(why)[:3] in ('401', '403'):
            hint = '; ' + missing_role_hint(TASK_LOGS_ROLE, account)
        logger.warning('storage account %s, container %s: %s (%s)%s', account, CONTAINER, what, why, hint)
