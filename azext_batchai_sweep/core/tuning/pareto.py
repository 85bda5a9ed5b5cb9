"""Pareto dominance and hypervolume in pure Python, on points to minimise (tuples of floats, one per objective).

A caller turns a goal "max" into minimisation by negating the values (objectives.py). These functions are what the
multi-objective TPE (samplers/motpe.py), the Pareto front of `run`/`metrics`/`status` and the report compute with;
tests/tuning/test_pareto.py checks the hypervolume against Optuna's own.

- :func:`nondominated_ranks`: Deb's fast non-dominated sort (O(M N^2)), rank 0 the front;
- :func:`hypervolume`: exact; 2 objectives by one sweep over the points sorted on the first objective, 3 and more
  by WFG (While, Bradstreet and Barone 2012): the hypervolume is the sum of each point's exclusive hypervolume, the
  part no later point covers, computed on the later points "limited" by it. Exact and fast for the fronts of a
  sweep (tens of points); exponential in the worst case, as every exact algorithm is in the number of objectives.
- :func:`greedy_hypervolume_subset`: the hypervolume subset selection MOTPE breaks a front's ties with (Optuna's
  ``_solve_hssp``): repeatedly the point that adds the most hypervolume to those chosen.
"""
import math


def dominates(a, b):
    """True when a is no worse than b in every objective and better in one (minimisation)."""
    better = False
    for x, y in zip(a, b):
        if x > y:
            return False
        if x < y:
            better = True
    return better


def nondominated_ranks(points):
    """The non-domination rank of each point (0: no point dominates it; 1: only rank-0 points do; ...)."""
    if points and all(len(p) == 2 for p in points):
        return _ranks_2d(points)
    n = len(points)
    dominated_by = [0] * n          # how many points dominate i
    dominating = [[] for _ in range(n)]  # the points i dominates
    for i in range(n):
        for j in range(i + 1, n):
            if dominates(points[i], points[j]):
                dominating[i].append(j)
                dominated_by[j] += 1
            elif dominates(points[j], points[i]):
                dominating[j].append(i)
                dominated_by[i] += 1
    ranks = [0] * n
    front = [i for i in range(n) if dominated_by[i] == 0]
    rank = 0
    while front:
        following = []
        for i in front:
            ranks[i] = rank
            for j in dominating[i]:
                dominated_by[j] -= 1
                if dominated_by[j] == 0:
                    following.append(j)
        front, rank = following, rank + 1
    return ranks


def _ranks_2d(points):
    """nondominated_ranks of 2-objective points in O(N log N) (Deb's sort is O(N^2): 10,000 jobs took minutes).

    In lexicographic order a point can only be dominated by points before it, and it is dominated by such a point q
    exactly when q's second value is at most its own (q then is no worse in both and differs). Each rank's smallest
    second value so far only grows with the rank (a point of rank k + 1 has a dominator of rank k, no larger in the
    second value), so a point's rank is the number of ranks whose smallest second value is at most its own, found by
    bisection. Equal points do not dominate each other: a run of them is ranked before any of it is recorded."""
    import bisect
    order = sorted(range(len(points)), key=points.__getitem__)  # (2 values each: their lexicographic order)
    lowest = []  # lowest[k]: the smallest second value of the rank-k points so far
    ranks = [0] * len(points)
    previous, rank = None, 0
    for i in order:
        point = points[i]
        if previous is None or point != previous:  # a new run of equal points: ranked before it is recorded
            second = point[1]
            rank = bisect.bisect_right(lowest, second)
            if rank == len(lowest):
                lowest.append(second)
            elif second < lowest[rank]:
                lowest[rank] = second
            previous = point
        ranks[i] = rank
    return ranks


def nondominated(points):
    """The points no other point dominates, each once (duplicates collapse), in their first order."""
    unique = list(dict.fromkeys(tuple(p) for p in points))
    if unique and all(len(p) == 2 for p in unique):
        return _nondominated_2d(unique)
    return [p for p in unique if not any(dominates(q, p) for q in unique)]


def _nondominated_2d(unique):
    """nondominated of distinct 2-objective points in O(N log N): in lexicographic order a point is dominated exactly
    when a point before it has a second value no larger (see _ranks_2d); the same points, in the same order."""
    lowest, dominated = float('inf'), set()
    for point in sorted(unique):
        if lowest <= point[1]:
            dominated.add(point)
        lowest = min(lowest, point[1])
    return [p for p in unique if p not in dominated]


def _hv2d(points, reference):
    """Exact 2-objective hypervolume of points that all dominate the reference."""
    area, best_y = 0.0, reference[1]
    for x, y in sorted(points):
        if y < best_y:
            area += (reference[0] - x) * (best_y - y)
            best_y = y
    return area


def _wfg(points, reference):
    """WFG's recursion on non-dominated points that all dominate the reference."""
    if not points:
        return 0.0
    if len(reference) == 2:
        return _hv2d(points, reference)
    if len(points) == 1:
        volume = 1.0
        for x, r in zip(points[0], reference):
            volume *= r - x
        return volume
    # Sorted worst-first on the last objective: the limited sets stay small (WFG's own order).
    ordered = sorted(points, key=lambda p: p[-1], reverse=True)
    total = 0.0
    for k, point in enumerate(ordered):
        own = box(point, reference)
        limited = nondominated([tuple(max(a, b) for a, b in zip(point, q)) for q in ordered[k + 1:]])
        total += own - _wfg(limited, reference)
    return total


def hypervolume(points, reference):
    """The volume dominated by ``points`` and bounded by ``reference`` (minimisation); points that do not
    strictly dominate the reference in every objective add nothing."""
    reference = tuple(float(r) for r in reference)
    inside = [tuple(float(x) for x in p) for p in points if all(x < r for x, r in zip(p, reference))]
    return _wfg(nondominated(inside), reference)


def _number(value):
    """A volume, or 0 where values near the float range's end made it inf - inf (a job's output is untrusted)."""
    return value if value == value else 0.0


def box(point, reference):
    """The hypervolume of one point alone."""
    volume = 1.0
    for x, r in zip(point, reference):
        volume *= max(0.0, r - x)
    return volume


def exclusive(point, others, reference):
    """The hypervolume ``point`` adds to ``others``: its box less the part the others cover (WFG's step: the others
    limited to the box, whose volume is usually far cheaper than the two whole sets')."""
    if not all(x < r for x, r in zip(point, reference)):
        return 0.0
    limited = [tuple(max(a, b) for a, b in zip(point, q)) for q in others]
    return _number(box(point, reference) - hypervolume(limited, reference))


def contributions(points, reference):
    """Each point's exclusive hypervolume: what the set loses without it (0 for a dominated or repeated point)."""
    fast = _front_contributions_2d(points, reference)
    if fast is not None:
        return fast
    return [exclusive(p, points[:i] + points[i + 1:], reference) for i, p in enumerate(points)]


def _front_contributions_2d(points, reference):
    """contributions() of a 2-objective front (no point dominates another; repeats allowed), the same floats in
    O(N log N), or None for anything else. Of the others limited by a point p, only two can be non-dominated: its
    left neighbour's (p's first value, the neighbour's second) and its right one's (the neighbour's first, p's
    second); a repeat of p limits to p itself (0 added). exclusive() sums their rectangles in that order."""
    front = _finite_front_2d(points, reference)
    if front is None:
        return None
    (r0, r1), values, distinct = front
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    rank = {v: k for k, v in enumerate(distinct)}
    found = []
    for point, (x, y) in zip(points, values):
        if not (x < r0 and y < r1):
            found.append(0.0)
            continue
        if counts[x, y] > 1:
            found.append(_number(box(point, reference) - _hv2d([(x, y)], (r0, r1))))
            continue
        k = rank[x, y]
        limited = []
        if k > 0 and distinct[k - 1][1] < r1:
            limited.append((x, distinct[k - 1][1]))
        if k + 1 < len(distinct) and distinct[k + 1][0] < r0:
            limited.append((distinct[k + 1][0], y))
        found.append(_number(box(point, reference) - _hv2d(limited, (r0, r1))))
    return found


def _finite_front_2d(points, reference):
    """((reference as floats), the points as float pairs, the distinct ones sorted) when the points are a finite
    2-objective front (no point dominates another; repeats allowed), else None."""
    if len(reference) != 2 or any(len(p) != 2 for p in points):
        return None
    r0, r1 = float(reference[0]), float(reference[1])
    values = [(float(p[0]), float(p[1])) for p in points]
    if not all(math.isfinite(v) for v in (r0, r1)) or not all(math.isfinite(x) and math.isfinite(y)
                                                               for x, y in values):
        return None
    distinct = sorted(set(values))
    if any(later[1] >= earlier[1] for earlier, later in zip(distinct, distinct[1:])):
        return None  # not a front
    return (r0, r1), values, distinct


def greedy_hypervolume_subset(points, size, reference):
    """Indices of ``size`` of the points, chosen one at a time by the largest hypervolume they add to the ones chosen
    before (ties: the earlier index), in the order chosen.

    Lazy greedy (as Optuna's HSSP for 3+ objectives): what a point adds only shrinks as points are chosen, so each
    candidate keeps the last gain computed as a bound and only the one with the largest bound is computed again;
    it is chosen once its fresh gain is still the largest. The same choice as computing every gain every time."""
    import bisect
    import heapq
    chosen, chosen_points = [], []
    heap = [(-box(p, reference), i) for i, p in enumerate(points)]
    heapq.heapify(heap)
    fresh = {}  # index -> the number of points chosen when its bound was computed
    # A finite 2-objective front: of the chosen points limited by a point, only its chosen neighbours' can be
    # non-dominated (a chosen repeat of it: itself), as in _front_contributions_2d; exclusive() of those alone sums the
    # same rectangles, the same floats, without the limited set of every chosen point.
    line = [] if _finite_front_2d(points, reference) is not None else None
    while heap and len(chosen) < size:
        bound, index = heapq.heappop(heap)
        if fresh.get(index) == len(chosen):
            chosen.append(index)
            chosen_points.append(points[index])
            if line is not None:
                bisect.insort(line, tuple(points[index]))
            continue
        gain = exclusive(points[index], chosen_points if line is None else _neighbours(line, tuple(points[index])),
                         reference)
        fresh[index] = len(chosen)
        heapq.heappush(heap, (-gain, index))
        del bound
    return chosen


def _neighbours(line, point):
    """The chosen points (sorted) next to ``point`` on a front: a repeat of it alone, else the nearest on each side."""
    import bisect
    at = bisect.bisect_left(line, point)
    if at < len(line) and line[at] == point:
        return [line[at]]
    return line[max(0, at - 1):at] + line[at:at + 1]


def reference_point(points):
    """Optuna's reference for a set of points: each objective's worst value, moved 10% further out (a worst value of
    0 becomes a tiny positive number), so that the worst points still count."""
    worst = [max(column) for column in zip(*points)]
    return tuple(max(1.1 * w, 0.9 * w) or 1e-12 for w in worst)
