"""A small evaluator of Azure Batch autoscale formulas, test code: independent of how pools.py writes its formula,
it reads the text as Batch's formula language (statements `$name = expression;`, ternary `?:`, comparisons,
+ - * /, max/min/avg/sum over numbers and sample vectors, `$PendingTasks.GetSample(...)` /
`.GetSamplePercent(...)`, `TimeInterval_*` constants, the `taskcompletion`-style deallocation keywords), so the tests
check what Batch would compute from the text the pool carries. The lifecycle double can evaluate pools with it.

`evaluate(formula, pending)`: `pending` is the $PendingTasks samples, oldest first, as (seconds ago, value), or a
`Samples` with an explicit available percentage; returns the variables the formula set.
"""
import re
from dataclasses import dataclass, field

TIME_INTERVALS = {'TimeInterval_Second': 1, 'TimeInterval_Minute': 60, 'TimeInterval_Hour': 3600,
                  'TimeInterval_Day': 86400, 'TimeInterval_Week': 604800, 'TimeInterval_Zero': 0}
KEYWORDS = {'taskcompletion', 'requeue', 'terminate', 'retaineddata'}
_TOKEN = re.compile(r'\s*(?:(\d+(?:\.\d*)?)|(\$?[A-Za-z_]\w*)|(<=|>=|==|!=|&&|\|\||[-+*/?:<>(),.;=!]))')


@dataclass
class Samples:
    """A metric's samples: (seconds ago, value), oldest first; `percent`: GetSamplePercent's answer (None: 100 when
    any sample is in the window, else 0)."""
    values: list = field(default_factory=list)
    percent: float = None

    def get_sample(self, arg):
        if arg == 1 and self.values:  # the last sample
            return [self.values[-1][1]]
        window = arg
        return [v for age, v in self.values if age <= window]

    def get_sample_percent(self, window):
        if self.percent is not None:
            return self.percent
        return 100.0 if any(age <= window for age, _ in self.values) else 0.0


def _tokens(text):
    text = re.sub(r'//[^\n]*|/\*.*?\*/', ' ', text, flags=re.S)
    position, out = 0, []
    while position < len(text):
        if text[position:].strip() == '':
            break
        match = _TOKEN.match(text, position)
        if not match:
            raise SyntaxError('cannot read formula at {!r}'.format(text[position:position + 20]))
        out.append(match.group(1) and ('num', float(match.group(1))) or match.group(2) and ('name', match.group(2))
                   or ('op', match.group(3)))
        position = match.end()
    return out


def _flatten(values):
    flat = []
    for value in values:
        flat.extend(value if isinstance(value, list) else [value])
    return flat


FUNCTIONS = {'max': lambda *a: max(_flatten(a)), 'min': lambda *a: min(_flatten(a)),
             'avg': lambda *a: sum(_flatten(a)) / len(_flatten(a)), 'sum': lambda *a: sum(_flatten(a)),
             'len': lambda *a: len(_flatten(a))}


class _Parser:
    def __init__(self, tokens, variables, metrics):
        self.tokens, self.i, self.vars, self.metrics = tokens, 0, variables, metrics

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else (None, None)

    def take(self, value=None):
        token = self.peek()
        if value is not None and token[1] != value:
            raise SyntaxError('expected {!r}, found {!r}'.format(value, token[1]))
        self.i += 1
        return token

    def statements(self):
        while self.peek()[0] is not None:
            kind, name = self.take()
            if kind != 'name':
                raise SyntaxError('a statement starts with a variable, not {!r}'.format(name))
            self.take('=')
            self.vars[name] = self.ternary()
            if self.peek()[1] == ';':
                self.take(';')

    def ternary(self):
        condition = self.comparison()
        if self.peek()[1] == '?':
            self.take('?')
            yes = self.ternary()
            self.take(':')
            no = self.ternary()
            return yes if condition else no
        return condition

    def _left_to_right(self, operand, operators):
        left = operand()
        while self.peek()[1] in operators:
            op = operators[self.take()[1]]
            left = op(left, operand())
        return left

    def comparison(self):
        truth = {'<': lambda a, b: a < b, '>': lambda a, b: a > b, '<=': lambda a, b: a <= b,
                 '>=': lambda a, b: a >= b, '==': lambda a, b: a == b, '!=': lambda a, b: a != b}
        return self._left_to_right(self.additive, {k: (lambda f: lambda a, b: 1.0 if f(a, b) else 0.0)(f)
                                                   for k, f in truth.items()})

    def additive(self):
        return self._left_to_right(self.term, {'+': lambda a, b: a + b, '-': lambda a, b: a - b})

    def term(self):
        return self._left_to_right(self.unary, {'*': lambda a, b: a * b, '/': lambda a, b: a / b})

    def unary(self):
        if self.peek()[1] == '-':
            self.take()
            return -self.unary()
        return self.primary()

    def arguments(self):
        self.take('(')
        args = []
        while self.peek()[1] != ')':
            args.append(self.ternary())
            if self.peek()[1] == ',':
                self.take(',')
        self.take(')')
        return args

    def primary(self):
        kind, value = self.take()
        if kind == 'num':
            return value
        if value == '(':
            inner = self.ternary()
            self.take(')')
            return inner
        if kind != 'name':
            raise SyntaxError('unexpected {!r}'.format(value))
        if value in self.metrics and self.peek()[1] == '.':
            self.take('.')
            method = self.take()[1]
            args = self.arguments()
            metric = self.metrics[value]
            if method == 'GetSample':
                return metric.get_sample(args[0])
            if method == 'GetSamplePercent':
                return metric.get_sample_percent(args[0])
            raise SyntaxError('unknown method ' + method)
        if value in FUNCTIONS and self.peek()[1] == '(':
            return FUNCTIONS[value](*self.arguments())
        if value in TIME_INTERVALS:
            return TIME_INTERVALS[value]
        if value in KEYWORDS:
            return value
        if value in self.vars:
            return self.vars[value]
        raise NameError('undefined in formula: ' + value)


def evaluate(formula, pending, current=None):
    """The variables a formula sets, given the $PendingTasks samples (`pending`: Samples, or a list of (seconds
    ago, value)); `current`: service-defined variables read by the formula ($TargetDedicatedNodes...)."""
    metrics = {'$PendingTasks': pending if isinstance(pending, Samples) else Samples(list(pending))}
    variables = dict(current or {'$TargetDedicatedNodes': 0, '$TargetLowPriorityNodes': 0})
    _Parser(_tokens(formula), variables, metrics).statements()
    return variables
