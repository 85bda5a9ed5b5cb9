"""A throw-away local Azure Files endpoint for tests: files_api.FilesApi behind a stdlib ThreadingHTTPServer."""
import base64
import http.server
import os
import threading
from dataclasses import dataclass

from azext_batchai_sweep.localservice.api.files_api import FilesApi, make_handler


@dataclass(frozen=True)
class FilesEndpoint:
    account_name: str
    account_key: str
    account_url: str  # path-style, as the SDK takes it: http://127.0.0.1:<port>/<account>
    storage_root: str

    def share_dir(self, share):
        """Where a share lives on disk (the layout contract with the local service)."""
        return os.path.join(self.storage_root, self.account_name, 'shares', share)


def start_files_endpoint(storage_root, account_name='localaccount'):
    """Start serving; returns (endpoint, server). The caller shuts the server down."""
    account_key = base64.b64encode(os.urandom(64)).decode()
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), make_handler(FilesApi(storage_root, account_key)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = 'http://127.0.0.1:{}/{}'.format(server.server_address[1], account_name)
    return FilesEndpoint(account_name, account_key, url, storage_root), server
