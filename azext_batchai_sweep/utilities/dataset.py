# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The old `utilities.dataset`: download_file and the recipes' MNIST / RNN dataset uploads.

As in the old module, a dataset already extracted in the notebook's folder (``mnist_dataset_full/``,
``rnn_dataset/``) is not downloaded again; the upload goes through the notebook's ``blob_service`` (the legacy
BlockBlobService of utilities/storage.py, or anything with ``create_blob_from_path``). The dataset archives are the
ones the old module downloaded (the Batch AI samples' public, read-only links, copied from
microsoftarchive/BatchAI utilities/dataset.py, MIT). One difference: the lines printed name a URL without its query
string, so a SAS token never reaches a notebook's output.
"""
import os
import urllib.parse
import zipfile

__all__ = ['download_file', 'download_and_upload_mnist_dataset_to_blob', 'download_and_upload_rnn_dataset_to_blob']

CHUNK_SIZE = 512 * 1024
DOWNLOAD_TIMEOUT_SECS = 60

MNIST_DATASET_URL = ('https://batchaisamples.blob.core.windows.net/samples/mnist_dataset_full.zip?st=2019-01-03T22%3A05'
                     '%3A00Z&se=2099-12-31T20%3A00%3A00Z&sp=rl&sv=2017-04-17&sr=c&sig=5UxAYC%2BrBAHdYmDLvHACYl3ZDPmmO51'
                     'QhNHBlVuO9vg%3D')
MNIST_FILES = ['t10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz', 'train-images-idx3-ubyte.gz',
               'train-labels-idx1-ubyte.gz', 'Train-28x28_cntk_text.txt', 'Test-28x28_cntk_text.txt',
               os.path.join('mnist_train_lmdb', 'data.mdb'), os.path.join('mnist_test_lmdb', 'data.mdb'),
               os.path.join('mnist_train_lmdb', 'lock.mdb'), os.path.join('mnist_test_lmdb', 'lock.mdb')]
MNIST_LOCAL_DIR = 'mnist_dataset_full'

RNN_DATASET_URL = ('https://batchaisamples.blob.core.windows.net/samples/rnn_dataset.zip?st=2018-07-27T07%3A00%3A00Z&'
                   'se=2100-01-01T07%3A59%3A00Z&sp=rl&sv=2017-04-17&sr=b&sig=46aIfggtstPhSfm%2B754hG%2F0kVT9jhINwKtj'
                   'PkDfESv4%3D')
RNN_FILES = ['linux_input.txt', 'shakespeare_input.txt', 'war_and_peace_input.txt']
RNN_LOCAL_DIR = 'rnn_dataset'


def _shown(url):
    """The URL as printed: without its query (a SAS token)."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, '', ''))


def download_file(sas, destination):
    """Download `sas` (any http(s) URL) to `destination`, creating its folder; prints ``Downloading <url> ...Done``."""
    import requests
    directory = os.path.dirname(destination)
    if directory:
        os.makedirs(directory, exist_ok=True)
    print('Downloading {0} ...'.format(_shown(sas)), end='')
    with requests.get(sas, stream=True, timeout=DOWNLOAD_TIMEOUT_SECS) as response:
        response.raise_for_status()  # the old function saved an error page as the file
        with open(destination, 'wb') as f:
            for chunk in response.iter_content(chunk_size=CHUNK_SIZE):
                if chunk:
                    f.write(chunk)
    print('Done')


def _download_and_upload(url, archive, local_dir, files, blob_service, container_name, directory, name,
                         uploading):  # pylint: disable=too-many-arguments
    if any(not os.path.exists(os.path.join(local_dir, f)) for f in files):
        download_file(url, archive)
        print('Extracting {0} dataset...'.format(name))
        with zipfile.ZipFile(archive, 'r') as z:
            z.extractall(local_dir)
    print(uploading)
    for f in files:
        blob_name = directory + '/' + f.replace(os.sep, '/')
        blob_service.create_blob_from_path(container_name, blob_name, os.path.join(local_dir, f))
    print('Done')


def download_and_upload_mnist_dataset_to_blob(blob_service, azure_blob_container_name, mnist_dataset_directory):
    """Download and extract the MNIST dataset (unless ``mnist_dataset_full/`` has it), then upload its files to
    ``<mnist_dataset_directory>/...`` of the container."""
    _download_and_upload(MNIST_DATASET_URL, 'mnist_dataset_full.zip', MNIST_LOCAL_DIR, MNIST_FILES, blob_service,
                         azure_blob_container_name, mnist_dataset_directory, 'MNIST',
                         'Uploading MNIST dataset...')


def download_and_upload_rnn_dataset_to_blob(blob_service, azure_blob_container_name, rnn_dataset_directory):
    """Download and extract the RNN dataset (unless ``rnn_dataset/`` has it), then upload its three text files to
    ``<rnn_dataset_directory>/...`` of the container."""
    _download_and_upload(RNN_DATASET_URL, 'rnn_dataset.zip', RNN_LOCAL_DIR, RNN_FILES, blob_service,
                         azure_blob_container_name, rnn_dataset_directory, 'RNN',
                         'Uploading RNN dataset')
