"""yaml_depth.text_depth, the depth bound read from the text before any parser, checked against PyYAML's composer.

The composer is the reference: for generated documents in every style PyYAML writes (block, flow, mixed, other
indentations, narrow lines that wrap scalars, canonical, every quoting style) and for hand-written shapes that
trip a lexer (brackets in comments, quotes and block scalars, apostrophes in plain text, multi-line flow and
quoted scalars, several documents), the bound equals the composed depth: never below it (a deep document would
reach the parser), and not above it (a valid document would be refused).
"""
import random
import time

import pytest
import yaml

from azext_batchai_sweep.core.spec.yaml_depth import text_depth

WORDS = ['a', 'b c', 'x: y', "it's", '"q"', '[br', '{c}', '#h', '- d', '1e5', '', ' lead', 'trail ', 'a\nb', '|',
         '>', '&x', '*y', '!t', '?', '%', '---', '\\"', 'http://h:80/[p]']
STYLES = [dict(default_flow_style=False), dict(default_flow_style=True), dict(default_flow_style=None),
          dict(default_flow_style=False, indent=4), dict(default_flow_style=False, width=20), dict(canonical=True),
          dict(default_flow_style=True, width=10), dict(default_flow_style=False, default_style='"'),
          dict(default_flow_style=False, default_style="'"), dict(default_flow_style=False, default_style='|'),
          dict(default_flow_style=False, explicit_start=True, explicit_end=True)]


def composed_depth(text):
    def depth(node):
        if isinstance(node, yaml.ScalarNode):
            return 1
        items = node.value if isinstance(node, yaml.SequenceNode) else [item for pair in node.value for item in pair]
        return 1 + max((depth(item) for item in items), default=0)
    return max((depth(node) for node in yaml.compose_all(text, Loader=yaml.SafeLoader) if node is not None),
               default=0)


def _document(rng, depth):
    roll = rng.random()
    if depth <= 0 or roll < 0.3:
        return rng.choice(WORDS + [1, 2.5, None, True])
    if roll < 0.65:
        return [_document(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(WORDS) + str(index): _document(rng, depth - 1) for index in range(rng.randint(0, 3))}


@pytest.mark.parametrize('seed', range(4))
def test_the_bound_is_the_composed_depth_for_every_style_pyyaml_writes(seed):
    rng = random.Random(seed)
    checked = 0
    for _ in range(60):
        document = _document(rng, rng.randint(0, 9))
        for style in STYLES:
            text = yaml.safe_dump(document, **style)
            assert text_depth(text) == composed_depth(text), (style, text)
            checked += 1
    assert checked == 60 * len(STYLES)


@pytest.mark.parametrize('text', [
    "a: it's [not a flow\nb: 1\n",
    'cmd: echo "[[[[" # [[[ comment\nx: \'{{{{\'\n',
    's: |\n  [[[[[[\n  {{{{\nt: 1\n',
    '- >-\n  [[[[\n- x\n',
    'a: [1,\n  [2,\n   [3]]]\nb: {c: [d, {e: f}]}\n',
    '---\na: 1\n---\n- [x]\n...\n',
    'a: &A [1,2]\nb: *A\nc: !!str x\nd: &B\n  e: 1\n',
    'key:\n  value on the next line\n  goes on\nk2:\n    - a\n    - b: [c]\n',
    'a:\n- b:\n  - c:\n    - d: 1\ne: 2\n',
    'a: "multi\n  line [ quote" \nb: [1]\n',
    '\'quoted key\': [1, [2]]\n"k": {a: b}\n',
    '- - - - x\n- y\n',
    'url: http://x:80/[a]\n',
    '# [[[[\n   # {{{\nx: 1 # [[[\n',
    'x: [a, \'b, [c\', "d]"]\n',
    'p: {a: 1, b: [c: d]}\n',
    'a:\n  -\n    -\nb: 1\n',
    '- \n- - \n',
    '{"json": {"nested": [1, {"deeper": ["x"]}]}, "escaped": "a \\" [ b"}\n',
    'job:\n  properties:\n    customToolkitSettings:\n      commandLine: python -c "print(sys.argv[1:])" {{LR}}\n',
])
def test_hand_written_shapes(text):
    assert text_depth(text) == composed_depth(text)


def test_a_deep_document_is_measured_in_linear_time_and_stops_at_the_limit():
    flow = 'deep: ' + '[' * 100000 + ']' * 100000 + '\n'
    started = time.perf_counter()
    assert text_depth(flow) == 100001  # the mapping, then 100,000 sequences
    block = 'deep:\n' + ''.join(' ' * (level + 1) + '-\n' for level in range(1400)) + 'end: 1\n'
    assert text_depth(block, limit=64) == 65  # stops at the first line past the limit
    assert text_depth(block) == 1402
    assert time.perf_counter() - started < 1.0
