"""Local folder names for downloaded outputs come from the service (job names, output directory ids): each must be
one plain folder name, never a path that could leave the destination."""
import pytest

from azext_batchai_sweep.core.outputs.download import _one_name  # pylint: disable=protected-access


@pytest.mark.parametrize('name', ['..', '.', '', 'a/b', '../x', 'a\\b', 'x\0y'])
def test_download_folders_refuse_names_that_are_paths(name):
    with pytest.raises(ValueError):
        _one_name(name)


def test_a_job_name_is_its_own_folder():
    assert _one_name('lr-0123456789abcdef') == 'lr-0123456789abcdef'
