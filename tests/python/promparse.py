"""A strict reader of the Prometheus text exposition format 0.0.4, for the tests of
`arenactl stats --prometheus`. parse(text) returns {family name: Family}; it raises
ExpositionError naming the line for anything the format does not allow:

  - a line that is neither a comment nor `name{label="value",...} value [timestamp]`;
  - metric or label names outside [a-zA-Z_:][a-zA-Z0-9_:]* / [a-zA-Z_][a-zA-Z0-9_]*; label values
    with escapes other than \\\\, \\" and \\n; a value that is not a Go float (+Inf, -Inf, NaN ok);
  - a sample whose family has no # HELP or no # TYPE before it, two HELP or TYPE lines for one
    family, a family whose samples are not contiguous, a sample repeated with the same labels;
  - histograms: a family with no _bucket, _sum or _count per label set, `le` missing or not
    increasing, bucket counts not cumulative, no le="+Inf" bucket, or +Inf != _count.
"""
import math
import re
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

METRIC = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


class ExpositionError(ValueError):
    pass


@dataclass
class Family:
    name: str
    help: str = None
    type: str = None
    samples: List[Tuple[str, Dict[str, str], float]] = field(default_factory=list)

    def value(self, name=None, **labels) -> float:
        """The value of the one sample `name` (default: the family's name) with exactly `labels`."""
        name = name or self.name
        for n, l, v in self.samples:
            if n == name and l == labels:
                return v
        raise KeyError(f"{name}{labels}")


def _float(s: str, where: str) -> float:
    if s in ("+Inf", "Inf"):
        return math.inf
    if s == "-Inf":
        return -math.inf
    if s == "NaN":
        return math.nan
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
        raise ExpositionError(f"{where}: value {s!r} is not a number")
    return float(s)


def _labels(text: str, where: str) -> Tuple[Dict[str, str], str]:
    """Parse `label="value",...}` at the start of text; return the labels and the rest after '}'."""
    labels: Dict[str, str] = {}
    i = 0
    while True:
        if text[i:i + 1] == "}":
            return labels, text[i + 1:]
        m = re.match(LABEL, text[i:])
        if not m:
            raise ExpositionError(f"{where}: bad label name at {text[i:]!r}")
        name = m.group(0)
        i += m.end()
        if text[i:i + 2] != '="':
            raise ExpositionError(f"{where}: label {name} lacks =\"")
        i += 2
        value = []
        while True:
            if i >= len(text):
                raise ExpositionError(f"{where}: label {name}: unterminated value")
            ch = text[i]
            if ch == "\\":
                nxt = text[i + 1:i + 2]
                if nxt not in ("\\", '"', "n"):
                    raise ExpositionError(f"{where}: label {name}: bad escape \\{nxt}")
                value.append("\n" if nxt == "n" else nxt)
                i += 2
            elif ch == '"':
                i += 1
                break
            else:
                value.append(ch)
                i += 1
        if name in labels:
            raise ExpositionError(f"{where}: label {name} twice")
        labels[name] = "".join(value)
        if text[i:i + 1] == ",":
            i += 1
        elif text[i:i + 1] != "}":
            raise ExpositionError(f"{where}: expected , or }} after label {name}")


def _family_of(name: str, families: Dict[str, Family]) -> str:
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and base in families and families[base].type in ("histogram", "summary"):
            return base
    return name


def parse(text: str) -> Dict[str, Family]:
    if text and not text.endswith("\n"):
        raise ExpositionError("the last line does not end with a newline")
    families: Dict[str, Family] = {}
    finished = set()
    current = None
    seen = set()
    for no, line in enumerate(text.split("\n")[:-1] if text else [], 1):
        where = f"line {no}"
        if line.startswith("#"):
            m = re.fullmatch(r"# (HELP|TYPE) (" + METRIC + r") ?(.*)", line)
            if not m:
                continue   # a plain comment
            kind, name, rest = m.groups()
            f = families.setdefault(name, Family(name))
            if name in finished:
                raise ExpositionError(f"{where}: {kind} for {name} after its samples ended")
            if kind == "HELP":
                if f.help is not None:
                    raise ExpositionError(f"{where}: second HELP for {name}")
                if re.search(r"\\[^\\n]|\\$", rest):
                    raise ExpositionError(f"{where}: HELP of {name}: bad escape")
                f.help = rest.replace("\\n", "\n").replace("\\\\", "\\")
            else:
                if f.type is not None:
                    raise ExpositionError(f"{where}: second TYPE for {name}")
                if f.samples:
                    raise ExpositionError(f"{where}: TYPE for {name} after its samples")
                if rest not in TYPES:
                    raise ExpositionError(f"{where}: unknown type {rest!r}")
                f.type = rest
            continue
        if not line.strip():
            continue
        m = re.match(METRIC, line)
        if not m:
            raise ExpositionError(f"{where}: bad metric name in {line!r}")
        name = m.group(0)
        rest = line[m.end():]
        labels: Dict[str, str] = {}
        if rest.startswith("{"):
            labels, rest = _labels(rest[1:], where)
        parts = rest.split(" ")
        if len(parts) not in (2, 3) or parts[0] != "":
            raise ExpositionError(f"{where}: expected ' value [timestamp]' after the name in {line!r}")
        value = _float(parts[1], where)
        if len(parts) == 3 and not re.fullmatch(r"-?\d+", parts[2]):
            raise ExpositionError(f"{where}: bad timestamp {parts[2]!r}")
        fam = _family_of(name, families)
        f = families.get(fam)
        if f is None or f.help is None or f.type is None:
            raise ExpositionError(f"{where}: sample {name} without # HELP and # TYPE for {fam} before it")
        if fam in finished:
            raise ExpositionError(f"{where}: samples of {fam} are not contiguous")
        if current is not None and current != fam:
            finished.add(current)
        current = fam
        key = (name, tuple(sorted(labels.items())))
        if key in seen:
            raise ExpositionError(f"{where}: sample {name}{labels} repeated")
        seen.add(key)
        if f.type == "histogram" and name == fam:
            raise ExpositionError(f"{where}: histogram {fam} has a bare sample")
        f.samples.append((name, labels, value))
    for f in families.values():
        if f.help is None or f.type is None:
            raise ExpositionError(f"family {f.name}: # HELP and # TYPE are both required")
        if f.type == "histogram":
            _check_histogram(f)
    return families


def _check_histogram(f: Family) -> None:
    series: Dict[tuple, dict] = {}
    for name, labels, value in f.samples:
        base = {k: v for k, v in labels.items() if k != "le"}
        s = series.setdefault(tuple(sorted(base.items())), {"buckets": [], "sum": None, "count": None})
        if name == f.name + "_bucket":
            if "le" not in labels:
                raise ExpositionError(f"{f.name}{base}: bucket without le")
            s["buckets"].append((_float(labels["le"], f"{f.name} le"), value))
        elif name == f.name + "_sum":
            s["sum"] = value
        elif name == f.name + "_count":
            s["count"] = value
    for key, s in series.items():
        where = f"{f.name}{dict(key)}"
        if not s["buckets"] or s["sum"] is None or s["count"] is None:
            raise ExpositionError(f"{where}: needs _bucket, _sum and _count")
        les = [le for le, _ in s["buckets"]]
        if les != sorted(les) or len(set(les)) != len(les):
            raise ExpositionError(f"{where}: le bounds not increasing: {les}")
        if les[-1] != math.inf:
            raise ExpositionError(f"{where}: no le=\"+Inf\" bucket")
        counts = [c for _, c in s["buckets"]]
        if any(b < a for a, b in zip(counts, counts[1:])):
            raise ExpositionError(f"{where}: bucket counts not cumulative: {counts}")
        if counts[-1] != s["count"]:
            raise ExpositionError(f"{where}: +Inf bucket {counts[-1]} != _count {s['count']}")
