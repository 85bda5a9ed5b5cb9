"""ownership.py: one owner id per data dir, kept across restarts; a pool or job is ours only with our owner id."""
from azext_batchai_sweep.localservice.schedulers.azurebatch import ownership


def test_the_owner_is_made_once_per_data_dir_and_kept(tmp_path):
    first = ownership.service_owner(str(tmp_path / '..' / tmp_path.name))
    assert first == ownership.service_owner(str(tmp_path))
    other = tmp_path / 'other'
    other.mkdir()
    assert ownership.service_owner(str(other)) != first


def test_only_a_pool_with_our_owner_id_is_ours():
    ours = {'id': 'p', 'metadata': ownership.metadata('me', '/subscriptions/s/.../clusters/c')}
    assert ownership.owner_of(ours) == 'me' and ownership.foreign(ours, 'me') is None
    assert 'owner me, for cluster /subscriptions/s/.../clusters/c' in ownership.foreign(ours, 'you')
    assert 'not made by an azext-batchai-sweep service' in ownership.foreign({'id': 'p'}, 'me')
    assert ownership.foreign({'id': 'p', 'metadata': [{'name': 'other', 'value': 'me'}]}, 'me')
