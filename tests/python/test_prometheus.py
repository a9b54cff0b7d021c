"""`arenactl stats --prometheus` (text exposition format 0.0.4) checked by a strict parser
(promparse.py): every sample line well-formed, HELP and TYPE for every metric, histogram buckets
cumulative with +Inf == _count, label escaping; the values against the stats JSON of a real
daemon; `--output` replacing the file atomically; when Debian's prometheus-node-exporter is
installed, node_exporter's textfile collector serving what arenad-metrics.service writes; and the
daemon's own scrape endpoint (metrics_listen) serving the same text, bounded and read-only."""
import json
import math
import os
import shlex
import socket
import stat
import subprocess
import tempfile
import time
import unittest
import urllib.request

import numpy as np

import arenad
import promparse
from ardaemon import ARENACTL, ARENAD, BUILD, SRC, WRAP, Daemon, golden, model_path

FACE = "face_detection_short_range"
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"


def arenactl(*args, check=True, env=None):
    return subprocess.run([*WRAP, ARENACTL, *args], capture_output=True, text=True, check=check, env=env, timeout=120)


class Parser(unittest.TestCase):
    """The validator itself: it must refuse what the format forbids, or the tests below prove nothing."""

    GOOD = ('# HELP h Latency\n# TYPE h histogram\nh_bucket{m="a",le="1"} 1\nh_bucket{m="a",le="+Inf"} 2\n'
            'h_sum{m="a"} 3\nh_count{m="a"} 2\n# HELP g A gauge\n# TYPE g gauge\ng{l="x\\\\y\\"z\\n"} 1.5e3\n')

    def test_accepts_a_well_formed_exposition(self):
        f = promparse.parse(self.GOOD)
        self.assertEqual(f["g"].value(l='x\\y"z\n'), 1500.0)
        self.assertEqual(f["h"].value("h_count", m="a"), 2)

    def test_refuses_what_the_format_forbids(self):
        bad = {
            "no HELP": "# TYPE g gauge\ng 1\n",
            "no TYPE": "# HELP g x\ng 1\n",
            "bad escape": '# HELP g x\n# TYPE g gauge\ng{l="\\t"} 1\n',
            "raw quote": '# HELP g x\n# TYPE g gauge\ng{l="a"b"} 1\n',
            "bad value": "# HELP g x\n# TYPE g gauge\ng one\n",
            "bad name": "# HELP g x\n# TYPE g gauge\n1g 1\n",
            "no newline at end": "# HELP g x\n# TYPE g gauge\ng 1",
            "not contiguous": "# HELP g x\n# TYPE g gauge\n# HELP k x\n# TYPE k gauge\ng 1\nk 1\ng{a=\"b\"} 2\n",
            "repeated": "# HELP g x\n# TYPE g gauge\ng 1\ng 2\n",
            "not cumulative": self.GOOD.replace('le="+Inf"} 2', 'le="+Inf"} 0').replace("h_count{m=\"a\"} 2",
                                                                                      "h_count{m=\"a\"} 0"),
            "+Inf != count": self.GOOD.replace('h_count{m="a"} 2', 'h_count{m="a"} 5'),
            "no +Inf": self.GOOD.replace('h_bucket{m="a",le="+Inf"} 2\n', ""),
            "le not increasing": self.GOOD.replace('le="1"', 'le="7"').replace(
                'h_bucket{m="a",le="+Inf"} 2\n', 'h_bucket{m="a",le="+Inf"} 2\nh_bucket{m="a",le="3"} 2\n'),
        }
        for why, text in bad.items():
            with self.subTest(why=why), self.assertRaises(promparse.ExpositionError):
                promparse.parse(text)


class LiveDaemon(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        cls.c = arenad.Client(cls.d.socket, timeout=60)
        cls.c.load("face", model_path(FACE), group="people")
        cls.c.load("palm", model_path("palm_detection_lite"), group="people")
        photo = golden(FACE, "photo")[2][0]
        cls.c.invoke_many("face", [photo] * 5)
        for _ in range(2):   # two error replies for the errors counter
            try:
                cls.c.invoke("face", np.zeros((1, 2), np.float32))
            except arenad.ArenadError as e:
                assert e.code == "ESHAPE", e
            else:
                raise AssertionError("a [1,2] input was accepted")
        cls.env = dict(os.environ, ARENAD_SOCKET=cls.d.socket)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        assert cls.d.stop() == 0

    def test_exposition_is_valid_and_matches_the_stats_json(self):
        text = arenactl("stats", "--prometheus", env=self.env).stdout
        stats = self.c.stats()
        f = promparse.parse(text)
        self.assertEqual(f["arenad_up"].value(), 1)
        for key in ("bytes", "used_bytes", "free_bytes", "largest_free_bytes"):
            self.assertEqual(f[f"arenad_pool_{key}"].value(), stats["pool"][key], key)
            self.assertEqual(f[f"arenad_pool_{key}"].type, "gauge")
        self.assertEqual(f["arenad_pool_bytes"].value(), 64 << 20)
        self.assertEqual(f["arenad_pool_free_blocks"].value(), stats["pool"]["free_blocks"])
        for key in ("compactions", "compacted_bytes"):
            self.assertEqual(f[f"arenad_pool_{key}_total"].value(), stats["pool"][key], key)
            self.assertEqual(f[f"arenad_pool_{key}_total"].type, "counter")
        face = next(m for m in stats["models"] if m["name"] == "face")
        self.assertEqual(f["arenad_model_invokes_total"].value(model="face"), 5)
        self.assertEqual(f["arenad_model_invokes_total"].type, "counter")
        self.assertEqual(f["arenad_model_errors_total"].value(model="face"), 2)
        self.assertEqual(f["arenad_model_invokes_total"].value(model="palm"), 0)
        self.assertEqual(f["arenad_model_arena_bytes"].value(model="face"), face["arena_bytes"])
        self.assertEqual(f["arenad_model_persistent_bytes"].value(model="face"), face["persistent_bytes"])
        self.assertEqual(f["arenad_group_activation_bytes"].value(group="people"),
                         stats["groups"][0]["activation_bytes"])
        h = f["arenad_model_invoke_latency_seconds"]
        self.assertEqual(h.type, "histogram")
        self.assertEqual(h.value("arenad_model_invoke_latency_seconds_count", model="face"), 5)
        self.assertEqual(h.value("arenad_model_invoke_latency_seconds_bucket", model="face", le="+Inf"), 5)
        self.assertEqual(h.value("arenad_model_invoke_latency_seconds_count", model="palm"), 0)
        les = [l["le"] for n, l, _ in h.samples if n.endswith("_bucket") and l["model"] == "face"]
        # Base units (seconds) as the exposition format's conventions ask: bounds are the stats JSON's
        # microsecond bounds / 1e6 written as exact decimals, the sum likewise.
        self.assertEqual(les[:3], ["0.00005", "0.0001", "0.00025"])
        self.assertEqual(len(les), 20)
        self.assertEqual([float(x) for x in les[:-1]],
                         [b["le"] / 1e6 for b in face["latency_us"]["buckets"]][:len(les) - 1])
        self.assertAlmostEqual(h.value("arenad_model_invoke_latency_seconds_sum", model="face"),
                               face["latency_us"]["sum"] / 1e6, places=6)
        self.assertLessEqual(h.value("arenad_model_invoke_latency_seconds_sum", model="face"),
                             5 * face["latency_us"]["max"] / 1e6)
        for fam in f:   # no family in a sub-unit of time or size
            self.assertNotRegex(fam, r"_(micro|milli|nano)seconds|_us$|_ms$", fam)
        for name in ("arenad_uptime_seconds", "arenad_connections", "arenad_requests_total"):
            self.assertIn(name, f)
        self.assertGreaterEqual(f["arenad_connections"].value(), 2)   # this test's client and arenactl
        self.assertEqual(f["arenad_requests_total"].type, "counter")
        for key, name, typ in (("pending_frame_bytes", "arenad_pending_frame_bytes", "gauge"),
                               ("max_pending_frame_bytes", "arenad_max_pending_frame_bytes", "gauge"),
                               ("frames_over_budget", "arenad_frames_over_budget_total", "counter"),
                               ("max_spare_block_bytes", "arenad_max_spare_block_bytes", "gauge"),
                               ("reserved_reply_bytes", "arenad_reserved_reply_bytes", "gauge"),
                               ("max_unwritten_reply_bytes", "arenad_max_unwritten_reply_bytes", "gauge")):
            self.assertEqual(f[name].value(), stats["daemon"][key], name)
            self.assertEqual(f[name].type, typ, name)
        self.assertEqual(f["arenad_max_pending_frame_bytes"].value(), 256 << 20)
        self.assertEqual(f["arenad_max_spare_block_bytes"].value(), 64 << 20)
        self.assertIn("arenad_spare_block_bytes", f)
        self.assertIn("arenad_unwritten_reply_bytes", f)
        self.assertEqual(f["arenad_max_unwritten_reply_bytes"].value(), 64 << 20)
        self.assertEqual(f["arenad_model_info"].value(model="face", group="people", strategy="best",
                                                      sha256=face["sha256"], path=face["path"]), 1)
        for fam in f.values():
            self.assertTrue(fam.help, fam.name)

    def test_label_values_are_escaped(self):
        stats = self.c.stats()
        odd = 'we"ird\\name\nline two'
        stats["models"][0]["name"] = odd
        stats["models"][0]["path"] = "C:\\models\\\"x\".tflite"
        stats["groups"][0]["name"] = 'g"\n\\'
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as t:
            json.dump(stats, t)
        try:
            text = arenactl("stats", "--prometheus", "--from", t.name).stdout
        finally:
            os.unlink(t.name)
        self.assertIn('model="we\\"ird\\\\name\\nline two"', text)
        f = promparse.parse(text)
        self.assertEqual(f["arenad_model_invokes_total"].value(model=odd), stats["models"][0]["invokes"])
        h = f["arenad_model_invoke_latency_seconds"]
        self.assertEqual(h.value("arenad_model_invoke_latency_seconds_bucket", model=odd, le="+Inf"),
                         stats["models"][0]["latency_us"]["count"])
        self.assertIn("C:\\models\\\"x\".tflite", [l.get("path") for _, l, _ in f["arenad_model_info"].samples])
        self.assertEqual(f["arenad_group_saved_bytes"].value(group='g"\n\\'), stats["groups"][0]["saved_bytes"])

    def test_output_replaces_the_file_atomically(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "arenad.prom")
            with open(out, "w") as f:
                f.write("old\n")
            os.chmod(out, 0o600)
            ino = os.stat(out).st_ino
            arenactl("stats", "--prometheus", "--output", out, env=self.env)
            st = os.stat(out)
            self.assertNotEqual(st.st_ino, ino)   # a new file renamed over the old one, not rewritten
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o644)
            self.assertEqual(os.listdir(tmp), ["arenad.prom"])   # no temporary left behind
            with open(out) as f:
                self.assertEqual(promparse.parse(f.read())["arenad_up"].value(), 1)
            # The daemon cannot be reached: the file says so (arenad_up 0) and the command fails.
            r = arenactl("-s", os.path.join(tmp, "absent.sock"), "stats", "--prometheus", "--output", out,
                         check=False)
            self.assertEqual(r.returncode, 1)
            self.assertIn("ECONN", r.stderr)
            with open(out) as f:
                self.assertEqual(promparse.parse(f.read())["arenad_up"].value(), 0)
            self.assertEqual(os.listdir(tmp), ["arenad.prom"])

    def test_usage_errors(self):
        for args in (["--json", "--prometheus"], ["--output", "x.prom"], ["extra"]):
            with self.subTest(args=args):
                self.assertEqual(arenactl("stats", *args, check=False, env=self.env).returncode, 2)

    def test_node_exporter_textfile_collector_serves_the_metrics(self):
        if not os.access(NODE_EXPORTER, os.X_OK):
            self.skipTest(f"{NODE_EXPORTER} not installed (Debian package prometheus-node-exporter): "
                          "node_exporter round trip not tested")
        with tempfile.TemporaryDirectory() as textdir:
            # The timer's command: arenad-metrics.service's ExecStart, with its Environment= values
            # replaced by this test's (the build's arenactl, a temporary textfile directory).
            cmd = unit_exec_start(os.path.join(SRC, "systemd", "arenad-metrics.service.in"),
                                  {"ARENAD_TEXTFILE_DIR": textdir}, bindir=BUILD)
            subprocess.run([*WRAP, *cmd], check=True, env=self.env, timeout=600 if WRAP else 60)
            self.assertEqual(os.listdir(textdir), ["arenad.prom"])
            port = free_loopback_port()
            ne = subprocess.Popen([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}",
                                   "--collector.disable-defaults", "--collector.textfile",
                                   f"--collector.textfile.directory={textdir}"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                body = scrape(f"http://127.0.0.1:{port}/metrics", ne)
            finally:
                ne.terminate()
                ne.wait(30)
                ne.stderr.close()
        f = promparse.parse(body)
        self.assertEqual(f["node_textfile_scrape_error"].value(), 0)
        self.assertEqual(f["arenad_up"].value(), 1)
        self.assertEqual(f["arenad_model_invokes_total"].value(model="face"), 5)
        self.assertEqual(f["arenad_pool_bytes"].value(), 64 << 20)
        h = f["arenad_model_invoke_latency_seconds"]
        self.assertEqual(h.type, "histogram")
        self.assertEqual(h.value("arenad_model_invoke_latency_seconds_bucket", model="face", le="+Inf"), 5)


class ScrapeEndpoint(unittest.TestCase):
    """arenad's own scrape endpoint (metrics_listen, on loopback TCP and on a Unix socket): GET /metrics
    answers the text `arenactl stats --prometheus` prints for the same daemon - one rendering
    (common/ar_prom.c) - in base units and the exposition format; anything else is refused."""

    # Families whose values move between two reads (the reads themselves are connections and
    # requests; the memory figures are measured at each read).
    MOVING = ("arenad_uptime_seconds", "arenad_connections", "arenad_requests_total")

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="arenad-metrics-")
        cls.port = free_loopback_port()
        cls.cfg = os.path.join(cls.tmp, "arenad.json")
        with open(cls.cfg, "w") as f:
            json.dump({"models": [], "metrics_listen": f"127.0.0.1:{cls.port}"}, f)
        cls.d = Daemon(extra=("--config", cls.cfg))
        cls.c = arenad.Client(cls.d.socket, timeout=60)
        cls.c.load("face", model_path(FACE))
        cls.c.invoke_many("face", [golden(FACE, "photo")[2][0]] * 3)
        cls.env = dict(os.environ, ARENAD_SOCKET=cls.d.socket)
        cls.url = f"http://127.0.0.1:{cls.port}/metrics"

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        assert cls.d.stop() == 0
        os.unlink(cls.cfg)
        os.rmdir(cls.tmp)

    def get(self, target="/metrics", method="GET"):
        """(status, headers, body) of one request on a fresh loopback connection."""
        return http_exchange(("127.0.0.1", self.port), f"{method} {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())

    def test_endpoint_and_arenactl_agree_in_base_units(self):
        status, headers, body = self.get()
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        self.assertEqual(int(headers["content-length"]), len(body))
        served = promparse.parse(body.decode())
        printed = promparse.parse(arenactl("stats", "--prometheus", env=self.env).stdout)
        stats = self.c.stats()
        # The same families, each with the same HELP, TYPE and label sets, and the same values but
        # for the few that the reads themselves move.
        self.assertEqual(sorted(served), sorted(printed))
        for name, f in served.items():
            g = printed[name]
            self.assertEqual((f.help, f.type), (g.help, g.type), name)
            self.assertEqual([(n, l) for n, l, _ in f.samples], [(n, l) for n, l, _ in g.samples], name)
            if name not in self.MOVING and not name.startswith("arenad_memory_") and name != "arenad_model_mapping_resident_bytes":
                self.assertEqual([v for *_, v in f.samples], [v for *_, v in g.samples], name)
        # Base units: time in seconds, sizes in bytes; no family in a sub-unit.
        for fam in served:
            self.assertNotRegex(fam, r"_(micro|milli|nano)seconds|_us$|_ms$|_kb$|_mb$", fam)
        h = served["arenad_model_invoke_latency_seconds"]
        self.assertEqual(h.type, "histogram")
        face = next(m for m in stats["models"] if m["name"] == "face")
        buckets = [(l["le"], v) for n, l, v in h.samples if n.endswith("_bucket") and l["model"] == "face"]
        les = [le for le, _ in buckets]
        self.assertEqual(les[-1], "+Inf")
        self.assertEqual([float(x) for x in les[:-1]], [b["le"] / 1e6 for b in face["latency_us"]["buckets"]])
        self.assertEqual([float(x) for x in les], sorted(float(x) for x in les))   # ascending, +Inf last
        self.assertEqual(buckets[-1][1], 3)
        self.assertEqual(h.value("arenad_model_invoke_latency_seconds_count", model="face"), 3)
        self.assertAlmostEqual(h.value("arenad_model_invoke_latency_seconds_sum", model="face"),
                               face["latency_us"]["sum"] / 1e6, places=6)
        self.assertEqual([v for _, v in buckets], sorted(v for _, v in buckets))   # cumulative
        self.assertEqual(served["arenad_pool_bytes"].value(), 64 << 20)
        self.assertEqual(served["arenad_model_arena_bytes"].value(model="face"), face["arena_bytes"])
        self.assertEqual(served["arenad_model_invokes_total"].value(model="face"), 3)
        self.assertEqual(served["arenad_up"].value(), 1)
        # The HELP and TYPE lines precede each family's samples in the text itself.
        lines = body.decode().splitlines()
        i = lines.index("# TYPE arenad_model_invoke_latency_seconds histogram")
        self.assertTrue(lines[i - 1].startswith("# HELP arenad_model_invoke_latency_seconds "))
        self.assertTrue(lines[i + 1].startswith('arenad_model_invoke_latency_seconds_bucket{model="face",le="0.00005"} '))

    def test_head_and_query_string(self):
        status, headers, body = self.get(method="HEAD")
        self.assertEqual(status, 200)
        self.assertEqual(body, b"")
        self.assertGreater(int(headers["content-length"]), 1000)
        status, _, body = self.get("/metrics?name[]=arenad_up")
        self.assertEqual(status, 200)
        self.assertEqual(promparse.parse(body.decode())["arenad_up"].value(), 1)
        # HTTP/1.0 without headers (the shortest request a scraper sends).
        status, _, body = http_exchange(("127.0.0.1", self.port), b"GET /metrics HTTP/1.0\r\n\r\n")
        self.assertEqual(status, 200)

    def test_slow_heads_do_not_keep_the_scraper_out(self):
        # Eight connections (the cap) each holding half a head: a scrape still gets its answer,
        # the oldest of them closed to make room. Before, the scrape's connection was closed at
        # accept (reset, no answer) until the slow ones timed out after 10 s.
        slow = []
        try:
            for _ in range(8):
                s = socket.create_connection(("127.0.0.1", self.port), timeout=60)
                s.sendall(b"GET /metrics HTTP/1.1\r\nX-")
                slow.append(s)
            time.sleep(0.2)
            status, _, body = self.get()
            self.assertEqual(status, 200)
            self.assertIn(b"arenad_uptime_seconds", body)
            # The oldest slow connection was the one closed.
            slow[0].settimeout(10)
            self.assertEqual(slow[0].recv(1), b"")
        finally:
            for s in slow:
                s.close()

    def test_other_requests_are_refused(self):
        status, headers, _ = self.get(method="POST")
        self.assertEqual(status, 405)
        self.assertEqual(headers["allow"], "GET, HEAD")
        self.assertEqual(self.get(method="DELETE")[0], 405)
        self.assertEqual(self.get("/")[0], 404)
        self.assertEqual(self.get("/metrics/x")[0], 404)
        self.assertEqual(self.get("/metricsx")[0], 404)
        self.assertEqual(http_exchange(("127.0.0.1", self.port), b"GET /metrics HTTP/2.0\r\n\r\n")[0], 400)
        self.assertEqual(http_exchange(("127.0.0.1", self.port), b"GET /metrics\r\n\r\n")[0], 400)
        # A NUL byte in the head: 400 at once (before, no answer until the 10 s timeout).
        t0 = time.monotonic()
        self.assertEqual(http_exchange(("127.0.0.1", self.port), b"GET /metrics\0 HTTP/1.1\r\n\r\n")[0], 400)
        self.assertEqual(http_exchange(("127.0.0.1", self.port), b"GET /metrics HTTP/1.1\r\nX: a\0b",
                                       close_write=False)[0], 400)
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(http_exchange(("127.0.0.1", self.port), b"GET /metrics HTTP/1.x\r\n\r\n")[0], 400)
        # A head that fills the request size cap (4096 bytes with its end) is refused, the daemon
        # serves on. (Exactly the bytes it reads: more unread would reset the connection.)
        big = b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 5000
        self.assertEqual(http_exchange(("127.0.0.1", self.port), big[:4095], close_write=False)[0], 431)
        # A client still sending past the cap gets its 431, not a reset: the daemon reads and drops
        # what follows the answer before it closes (AR_METRICS_LINGER_MS).
        for _ in range(3):
            self.assertEqual(http_exchange(("127.0.0.1", self.port), big + b"b" * 60000)[0], 431)
        self.assertEqual(self.get()[0], 200)
        # The regular socket serves on too: the endpoint reaches nothing but the stats.
        self.assertEqual([m.name for m in self.c.models()], ["face"])

    def test_unix_socket_endpoint(self):
        path = os.path.join(self.tmp, "metrics.sock")
        cfg = os.path.join(self.tmp, "unix.json")
        with open(cfg, "w") as f:
            json.dump({"models": [], "metrics_listen": path, "socket_mode": "0600"}, f)
        d = Daemon(extra=("--config", cfg))
        try:
            self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)   # socket_mode, as the daemon's socket
            status, headers, body = http_exchange(path, b"GET /metrics HTTP/1.1\r\nHost: arenad\r\n\r\n")
            self.assertEqual(status, 200)
            f = promparse.parse(body.decode())
            self.assertEqual(f["arenad_up"].value(), 1)
            self.assertEqual(f["arenad_pool_bytes"].value(), 64 << 20)
        finally:
            self.assertEqual(d.stop(), 0)
            os.unlink(cfg)
        self.assertFalse(os.path.exists(path))   # removed at exit

    def test_metrics_listen_is_off_by_default_and_checked(self):
        self.assertIn(f"metrics: http://127.0.0.1:{self.port}/metrics", self.d.log())
        d = Daemon()
        try:
            self.assertNotIn("metrics:", d.log())
        finally:
            self.assertEqual(d.stop(), 0)
        cfg = os.path.join(self.tmp, "bad.json")
        with open(cfg, "w") as f:
            json.dump({"models": [], "metrics_listen": "localhost:9464"}, f)
        r = subprocess.run([*WRAP, ARENAD, "--check-config", cfg], capture_output=True, text=True,
                           timeout=120)
        os.unlink(cfg)
        self.assertEqual(r.returncode, 1)
        self.assertIn("metrics_listen: \"localhost:9464\": the host must be an IPv4 address", r.stderr)


def http_exchange(addr, request, close_write=True):
    """Send `request` bytes to addr ((host, port) or a Unix socket path), read to EOF; (status,
    lower-cased headers, body)."""
    fam = socket.AF_UNIX if isinstance(addr, str) else socket.AF_INET
    with socket.socket(fam, socket.SOCK_STREAM) as s:
        s.settimeout(60)
        s.connect(addr)
        s.sendall(request)
        if close_write:
            s.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    return status, headers, body


def unit_exec_start(path, env, bindir):
    """ExecStart= of a unit file as argv: @bindir@ filled in, ${VAR} from `env`, else from the
    unit's own Environment= lines."""
    unit_env = {}
    exec_start = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("Environment="):
                k, _, v = line[len("Environment="):].partition("=")
                unit_env[k] = v
            elif line.startswith("ExecStart="):
                exec_start = line[len("ExecStart="):]
    unit_env.update(env)
    argv = []
    for word in shlex.split(exec_start.replace("@bindir@", bindir)):
        for k, v in unit_env.items():
            word = word.replace("${" + k + "}", v)
        argv.append(word)
    return argv


def free_loopback_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(url, proc):
    """GET url once the server answers (bounded: 60 s); loopback only, never through a proxy."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(f"node_exporter exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
        try:
            with opener.open(url, timeout=10) as r:
                return r.read().decode()
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


if __name__ == "__main__":
    unittest.main()
