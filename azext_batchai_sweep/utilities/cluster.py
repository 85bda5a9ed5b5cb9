# --------------------------------------------------------------------------------------------
# Licensed under the MIT License.
# --------------------------------------------------------------------------------------------
"""The old `utilities.cluster`: print_cluster_status, the line every recipe prints after creating its cluster."""

__all__ = ['print_cluster_status']


def _value(enum_or_str):
    return getattr(enum_or_str, 'value', enum_or_str)


def print_cluster_status(cluster):
    """Print the cluster's allocation state and node counts, then its errors, in the old function's format:
    ``Cluster state: steady Target: 1; Allocated: 1; Idle: 1; Unusable: 0; Running: 0; Preparing: 0; Leaving: 0``
    (manual scale; ``Min: ..; Max: ..; Initial: ..;`` in place of ``Target`` for auto-scale)."""
    counts = cluster.node_state_counts
    tail = 'Allocated: {0}; Idle: {1}; Unusable: {2}; Running: {3}; Preparing: {4}; Leaving: {5}'.format(
        cluster.current_node_count, counts.idle_node_count, counts.unusable_node_count, counts.running_node_count,
        counts.preparing_node_count, counts.leaving_node_count)
    scale = cluster.scale_settings
    if scale.auto_scale is None:
        print('Cluster state: {0} Target: {1}; {2}'.format(
            _value(cluster.allocation_state), scale.manual.target_node_count, tail))
    else:
        auto = scale.auto_scale
        print('Cluster state: {0} Min: {1}; Max: {2}; Initial: {3}; {4}'.format(
            _value(cluster.allocation_state), auto.minimum_node_count, auto.maximum_node_count,
            auto.initial_node_count, tail))
    for error in cluster.errors or []:
        print('Cluster error: {0}: {1}'.format(error.code, error.message))
        if error.details:
            print('Details:')
            for detail in error.details:
                print('{0}: {1}'.format(detail.name, detail.value))
