"""Each consumer tokenizer of slurmgen/spec/grammar/ against the consumer itself, on a generated corpus of tricky lines.

- sshd: Debian's openssh-server (`sshd -T -f FILE -C user=…`), the same servconf.c/misc.c code as the
  login image's OpenSSH (grammar/sshd.py names the tags).
- Slurm: parse_config.c as built in ../shared/slurm (slurm-26-05-3-1), called through libslurm's
  exported s_p_* functions with a table of the corpus' keys: the code slurmctld reads slurm.conf with.
- sssd: ding-libs' libini_config (Debian's libini-config5 0.6.2, as the images'), with the flags sssd
  passes (src/util/sss_ini.c), and `sssctl config-check` on the file slurmgen renders.

For a line the tokenizer reads, the consumer must read the same; for a line it refuses as one the
consumer refuses, the consumer must refuse it; and no line the sshd check accepts may change what
slurmgen's own sshd lines set, for root or anyone else. Each test skips, naming what is missing,
without ../shared or the Debian packages (tests/deep/debian-packages.txt; .ci/run installs them).
"""

from __future__ import annotations

import ctypes
import itertools
import subprocess
from pathlib import Path
from typing import Any

import pytest

from charts.directory import sssd_conf_text
from charts.login import SSHD_CONFIG
from slurmgen.spec._checks import slurm_text
from slurmgen.spec.grammar import Unreadable, slurm_conf, sshd, sssd
from tests.conftest import SHARED, skip_or_fail

SSHD = Path("/usr/sbin/sshd")
LIBSLURM = SHARED / "slurm" / "lib" / "libslurm.so.45.0.0"
LIBINI = Path("/usr/lib/x86_64-linux-gnu/libini_config.so.5")
SSSCTL = Path("/usr/sbin/sssctl")


def _need(path: Path, package: str) -> None:
    """Skip (or fail in CI) without ../shared, then without the consumer `package` installs at `path`."""
    if not SHARED.exists():
        skip_or_fail(f"deep test: runs beside {SHARED}/ (absent here), where .ci/run installs {package}")
    if not path.exists():
        skip_or_fail(f"deep test: needs {path} from Debian's {package} (tests/deep/debian-packages.txt; "
                     f".ci/run installs it) beside {SHARED}/")


# --- sshd -----------------------------------------------------------------------------------------

_KEYWORDS = ("Match", "Include", "Banner", "ClientAliveInterval", "PasswordAuthentication", "PermitRootLogin")
_ARGS = {
    "Match": ("all", "User *", "User root", '"User" bob', "Address 1.2.3.4"),
    "Include": ("/nonexistent/x.conf",),
    "Banner": ("/etc/issue", '"/a b"', "'/a b'", "/a\\ b", "/x #c", "/x#c", '"/x', '/a\\"b', "'/a\"b'"),
    "ClientAliveInterval": ("77", '"77"', "'77'", "77 #c"),
    "PasswordAuthentication": ("yes",),
    "PermitRootLogin": ("yes",),
}


def _spellings(word: str) -> list[str]:
    """How a keyword can be written so that it may or may not be the keyword sshd reads."""
    return [word, word.lower(), word.upper(), f'"{word}"', f"'{word}'", f'{word[:2]}""{word[2:]}', f'""{word}',
            f'"{word}', f'{word}"', f'{word[:3]}"{word[3:]}"', f"\\{word}", f"#{word}", f" {word}", f"\t{word}"]


def sshd_corpus() -> list[str]:
    lines = [f"{kw}{sep}{arg}" for word in _KEYWORDS for kw in _spellings(word)
             for sep in (" ", "=", " = ", "\t", "  =") for arg in _ARGS[word]]
    return [*lines, "", "   ", "# comment", "=Banner /x", "Banner", "Banner ", '""', "\"\" Banner /x"]


def _sshd_t(tmp: Path, text: str, user: str) -> tuple[int, dict[str, str]]:
    """sshd's effective settings for a connection of `user` with this config, and its exit code."""
    conf = tmp / "sshd_config"
    conf.write_text(f"HostKey {tmp / 'hostkey'}\n{text}")
    run = subprocess.run([str(SSHD), "-T", "-f", str(conf), "-C", f"user={user},host=h.example,addr=1.2.3.4"],
                         capture_output=True, text=True)
    settings = dict(line.split(" ", 1) for line in run.stdout.splitlines() if " " in line)
    return run.returncode, settings


@pytest.fixture(scope="module")
def sshd_dir(tmp_path_factory) -> Path:
    _need(SSHD, "openssh-server")
    tmp = tmp_path_factory.mktemp("sshd")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "hostkey")], check=True)
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd -T wants its privilege separation folder
    return tmp


def _expected_sshd(line: sshd.Line) -> tuple[str, str] | None:
    """The -T line a directive of an observable keyword must produce."""
    if line.key == "banner":
        return "banner", line.args[0]
    if line.key == "clientaliveinterval":
        return "clientaliveinterval", line.args[0]
    return None


def test_sshd_reads_every_line_as_the_tokenizer_does(sshd_dir):
    # GIVEN slurmgen's own sshd lines followed by each line of the corpus
    _, baseline = _sshd_t(sshd_dir, SSHD_CONFIG, "bob")
    disagreements = []
    for raw in sshd_corpus():
        rc, settings = _sshd_t(sshd_dir, SSHD_CONFIG + raw + "\n", "bob")
        # WHEN the tokenizer reads the line
        try:
            line = sshd.read_line(raw)
        except Unreadable as err:
            # THEN a line refused as one sshd refuses is refused by sshd
            if "refuses the whole file" in str(err) and rc == 0:
                disagreements.append((raw, "sshd accepted it", str(err)))
            continue
        # THEN a comment changes nothing, and an observable keyword has exactly the value read
        if line is None:
            if rc != 0 or settings != baseline:
                disagreements.append((raw, "not a comment to sshd", rc))
        elif (expected := _expected_sshd(line)) is not None and settings.get(expected[0]) != expected[1]:
            disagreements.append((raw, f"sshd read {settings.get(expected[0])!r}", expected[1], rc))
    assert disagreements == []


def test_no_line_the_sshd_check_accepts_changes_slurmgens_settings(sshd_dir):
    # GIVEN each corpus line the check accepts, followed by lines that apply only inside a Match block
    trailer = "PasswordAuthentication yes\nKbdInteractiveAuthentication yes\nPermitRootLogin yes\n"
    accepted = [raw for raw in sshd_corpus() if not list(slurm_text.sshd_extra_config({"login": {"extraSshdConfig": raw}}))]
    assert len(accepted) >= 20  # the corpus holds plenty of harmless lines
    changed = []
    for raw, user in itertools.product(accepted, ("root", "bob")):
        # WHEN sshd reads the whole file for a connection
        rc, settings = _sshd_t(sshd_dir, SSHD_CONFIG + raw + "\n" + trailer, user)
        # THEN slurmgen's settings hold (or sshd refuses the file, which changes nothing it grants)
        ours = {k: settings.get(k) for k in ("passwordauthentication", "kbdinteractiveauthentication", "permitrootlogin")}
        if rc == 0 and ours != {"passwordauthentication": "no", "kbdinteractiveauthentication": "no",
                                "permitrootlogin": "without-password"}:
            changed.append((raw, user, ours))
    assert changed == []


def test_the_issue_examples_are_what_sshd_does(sshd_dir):
    # GIVEN the examples of issue 32 / WHEN sshd reads them / THEN `"Match" all` re-enables passwords and
    # root login (so the check must read it as Match), and `Ma""tch all` makes sshd refuse the file
    trailer = "PasswordAuthentication yes\nPermitRootLogin yes\n"
    rc, settings = _sshd_t(sshd_dir, SSHD_CONFIG + '"Match" all\n' + trailer, "bob")
    assert (rc, settings["passwordauthentication"], settings["permitrootlogin"]) == (0, "yes", "yes")
    assert list(slurm_text.sshd_extra_config({"login": {"extraSshdConfig": '"Match" all'}}))
    assert _sshd_t(sshd_dir, SSHD_CONFIG + 'Ma""tch all\n', "bob")[0] != 0


# --- Slurm (parse_config.c through libslurm) ------------------------------------------------------

_S_P_STRING, _S_P_POINTER = 1, 6
_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_char_p,
                            ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
_DESTROY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Option(ctypes.Structure):
    """s_p_options_t (src/common/parse_config.h at slurm-26-05-3-1)."""

    _fields_ = [("key", ctypes.c_char_p), ("type", ctypes.c_int), ("handler", _HANDLER), ("destroy", _DESTROY),
                ("line_options", ctypes.c_void_p), ("pack", ctypes.c_void_p), ("unpack", ctypes.c_void_p)]


class Slurm:
    """Slurm's own config parser: a file read with a table of keys, entity lines caught by a handler."""

    GLOBAL = ("SchedulerParameters", "SchedulerType", "AccountingStoragePass", "JobCompPass", "Epilog", "MailProg",
              "PriorityType", "DefMemPerCPU")
    ENTITY = ("PartitionName", "NodeSet")
    PARAMS = ("PartitionName", "NodeSet", "Nodes", "Feature", "Default", "MaxTime", "OverSubscribe", "State",
              "PriorityTier", "AllowGroups")

    def __init__(self, path: Path) -> None:
        lib = ctypes.CDLL(str(path))
        lib.slurm_s_p_hashtbl_create.restype = ctypes.c_void_p
        lib.slurm_s_p_hashtbl_create.argtypes = [ctypes.c_void_p]
        lib.slurm_s_p_hashtbl_destroy.argtypes = [ctypes.c_void_p]
        lib.slurm_s_p_parse_file.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32,
                                             ctypes.c_char_p]
        lib.slurm_s_p_parse_line.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
        lib.slurm_s_p_get_string.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_char_p, ctypes.c_void_p]
        self.lib = lib
        self.entities: list[tuple[str, str, str]] = []

        @_HANDLER
        def entity(dest: Any, kind: int, key: bytes, value: bytes, rest: int, leftover: Any) -> int:
            text = ctypes.string_at(rest)
            self.entities.append((key.decode(), value.decode(), text.decode()))
            leftover[0] = rest + len(text)  # the rest of the line is read below, by s_p_parse_line
            return 1

        self._keep = (entity, _DESTROY(lambda data: None))

    def _table(self, keys: tuple[str, ...], handler: bool) -> Any:
        options = (_Option * (len(keys) + len(self.ENTITY) + 1))()
        for index, key in enumerate(keys):
            options[index].key, options[index].type = key.encode(), _S_P_STRING
        if handler:
            for index, key in enumerate(self.ENTITY, start=len(keys)):
                options[index].key, options[index].type = key.encode(), _S_P_POINTER
                options[index].handler, options[index].destroy = self._keep
        return self.lib.slurm_s_p_hashtbl_create(options)

    def _get(self, table: Any, keys: tuple[str, ...]) -> dict[str, str]:
        out = {}
        for key in keys:
            value = ctypes.c_char_p()
            if self.lib.slurm_s_p_get_string(ctypes.byref(value), key.encode(), table):
                out[key.casefold()] = (value.value or b"").decode()
        return out

    def read_file(self, path: Path) -> tuple[int, dict[str, str], list[tuple[str, str, dict[str, str] | None]]]:
        """(return code, global key -> value, [(entity key, name, its parameters or None when unreadable)])."""
        self.entities = []
        table = self._table(self.GLOBAL, handler=True)
        rc = self.lib.slurm_s_p_parse_file(table, None, str(path).encode(), 0, None)
        values = self._get(table, self.GLOBAL)
        self.lib.slurm_s_p_hashtbl_destroy(table)
        entities = []
        for key, name, rest in self.entities:
            sub = self._table(self.PARAMS, handler=False)
            left = ctypes.c_char_p()
            clean = self.lib.slurm_s_p_parse_line(sub, rest.encode(), ctypes.byref(left))
            rest_left = (left.value or b"").decode() if left.value is not None else rest
            params = self._get(sub, self.PARAMS) if clean and rest_left.strip() == "" else None
            self.lib.slurm_s_p_hashtbl_destroy(sub)
            entities.append((key.casefold(), name, params))
        return rc, values, entities


def slurm_corpus() -> list[str]:
    values = ("bf_continue", '"a b"', '"ab"', 'a"b', '"a"b', "a\\#b", "a#b", "a\\\\b", "a\\", "a\\\\", "\u00a0a",
              "a\u00a0AccountingStoragePass=x", ";x", ",x", "")
    keys = ("SchedulerParameters", "schedulerparameters", "AccountingStoragePass", "JobCompPass")
    globals_ = [f"{k}{sep}{v}" for k in keys for sep in ("=", " = ", "+=") for v in values]
    partitions = [f"PartitionName=p{sep}Nodes=x{tail}" for sep in (" ", "  ", "\t", "\u00a0")
                  for tail in ("", " Default=YES", " OverSubscribe=NO\\", " MaxTime=1:00:00 #c", " State=UP Foo",
                               ' AllowGroups="a b"', " Nodes=y", " nodes=z", " Feature=a\\ b")]
    return [*globals_, *partitions, "SchedulerParameters=a MailProg=/bin/x", "NodeSet=n Feature=n"]


@pytest.fixture(scope="module")
def slurm() -> Slurm:
    _need(LIBSLURM, "Slurm (../shared/slurm, see its BUILD.md)")
    return Slurm(LIBSLURM)


def test_slurm_reads_every_line_as_the_tokenizer_does(slurm, tmp_path):
    # GIVEN each corpus line followed by another slurm.conf line, as the generator writes them
    following = "PriorityType=priority/basic"
    disagreements = []
    for raw in slurm_corpus():
        conf = tmp_path / "slurm.conf"
        conf.write_text(f"{raw}\n{following}\n", encoding="utf-8")
        rc, values, entities = slurm.read_file(conf)
        # WHEN the tokenizer reads the line
        try:
            tokens = slurm_conf.read_line(raw)
        except Unreadable:
            continue  # refused: tests below show the refusals are of what Slurm reads otherwise
        # THEN Slurm reads it cleanly, the same keys and values, and the next line intact
        want_values: dict[str, str] = {}
        want_entities = []
        if tokens and tokens[0].folded in {k.casefold() for k in Slurm.ENTITY}:
            params: dict[str, str] = {}
            for token in tokens[1:]:  # the entity's own key is the handler's, the rest its parameters
                params[token.folded] = token.value
            want_entities = [(tokens[0].folded, tokens[0].value, params)]
        else:
            want_values = {t.folded: t.value for t in tokens if not t.op}
        want_values["prioritytype"] = "priority/basic"
        got_ops = {t.folded for t in tokens if t.op}
        values = {k: v for k, v in values.items() if k not in got_ops}
        if (rc, values, entities) != (0, want_values, want_entities):
            disagreements.append((raw, (rc, values, entities), (0, want_values, want_entities)))
    assert disagreements == []


@pytest.mark.parametrize(("raw", "rc_ok", "key", "read", "next_line_kept"), [
    # a trailing backslash joins the next line onto this one (issue 32: it swallows the next slurm.conf line)
    ("SchedulerParameters=bf_continue\\", True, "schedulerparameters", "bf_continuePriorityType=priority/basic", False),
    ("PartitionName=p Nodes=x OverSubscribe=NO\\", True, None, None, False),
    # `#` cuts the value; an escaped one loses its backslash
    ("SchedulerParameters=a#b", True, "schedulerparameters", "a", True),
    ("SchedulerParameters=a\\#b", True, "schedulerparameters", "a#b", True),
    # a quote that wraps no whole value stays in it; a no-break space is part of the value
    ('Epilog="/opt/x"y', True, "epilog", '"/opt/x"y', True),
    ("MailProg=/bin/mail\u00a0-s", True, "mailprog", "/bin/mail\u00a0-s", True),
    # a second key on a global line: a parse error, which stops slurmctld
    ("SchedulerParameters=a MailProg=/bin/x", False, None, None, True),
])
def test_every_slurm_refusal_is_of_a_line_slurm_reads_otherwise(slurm, tmp_path, raw, rc_ok, key, read, next_line_kept):
    # GIVEN a line the tokenizer refuses, then another line
    with pytest.raises(Unreadable):
        slurm_conf.read_line(raw)
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"{raw}\nPriorityType=priority/basic\n", encoding="utf-8")
    # WHEN Slurm reads the file
    rc, values, _ = slurm.read_file(conf)
    # THEN it reads what the refusal says, not the text as written
    assert (rc == 0, "prioritytype" in values) == (rc_ok, next_line_kept)
    if key is not None:
        assert values[key] == read


# --- sssd (ding-libs' ini parser with sssd's flags) -----------------------------------------------

class Ini:
    """libini_config with the flags of sssd's sss_ini.c: INI_STOP_ON_ANY, INI_MV1S_OVERWRITE, INI_PARSE_NOWRAP."""

    def __init__(self, path: Path) -> None:
        lib = ctypes.CDLL(str(path))
        for name, res, args in (
            ("ini_config_create", ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p)]),
            ("ini_config_file_open", ctypes.c_int, [ctypes.c_char_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_void_p)]),
            ("ini_config_parse", ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint32,
                                                ctypes.c_void_p]),
            ("ini_get_section_list", ctypes.POINTER(ctypes.c_char_p), [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int),
                                                                        ctypes.POINTER(ctypes.c_int)]),
            ("ini_get_attribute_list", ctypes.POINTER(ctypes.c_char_p), [ctypes.c_void_p, ctypes.c_char_p,
                                                                          ctypes.POINTER(ctypes.c_int),
                                                                          ctypes.POINTER(ctypes.c_int)]),
            ("ini_get_config_valueobj", ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int,
                                                       ctypes.POINTER(ctypes.c_void_p)]),
            ("ini_get_const_string_config_value", ctypes.c_char_p, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]),
            ("ini_config_file_close", None, [ctypes.c_void_p]),
            ("ini_config_destroy", None, [ctypes.c_void_p]),
        ):
            getattr(lib, name).restype = res
            getattr(lib, name).argtypes = args
        self.lib = lib

    def _list(self, items: Any, size: int) -> list[str]:
        return [items[i].decode() for i in range(size)] if items else []

    def read(self, path: Path) -> tuple[int, dict[tuple[str, str], str]]:
        """(parse result, (section, key) -> value)."""
        lib, config, handle = self.lib, ctypes.c_void_p(), ctypes.c_void_p()
        lib.ini_config_create(ctypes.byref(config))
        if lib.ini_config_file_open(str(path).encode(), 0, ctypes.byref(handle)):
            raise OSError(path)
        rc = lib.ini_config_parse(handle, 0, 0, 0x0001, config)
        out: dict[tuple[str, str], str] = {}
        if rc == 0:
            size, err = ctypes.c_int(), ctypes.c_int()
            for section in self._list(lib.ini_get_section_list(config, ctypes.byref(size), ctypes.byref(err)), size.value):
                keys = lib.ini_get_attribute_list(config, section.encode(), ctypes.byref(size), ctypes.byref(err))
                for key in self._list(keys, size.value):
                    vo = ctypes.c_void_p()
                    lib.ini_get_config_valueobj(section.encode(), key.encode(), config, 0, ctypes.byref(vo))
                    value = lib.ini_get_const_string_config_value(vo, ctypes.byref(err)) if vo else None
                    out[(section, key)] = (value or b"").decode()
        lib.ini_config_file_close(handle)
        lib.ini_config_destroy(config)
        return rc, out


def sssd_corpus() -> list[str]:
    return ["ldap_default_authtok = x", "  ldap_default_authtok = x", "\tkey=\tv\t", ";key = v", "#key = v",
            " ;key = v", " #key = v", "key = a ; b", "key = a # b", "key\u00a0= v", "key =\u00a0v", "    continued",
            "// c", "/* c */", "/* open\nkey = hidden\n*/", "/* never closed", "[sec]", "[ sec ]", "[sec", "[]",
            "[a]b]", "key", "=v", "key==v", "k e y = v", 'key = "quoted"', "key = v\r", "key =", "key = v\nkey = w",
            "KEY = v", "key = v\n\n   \nother = w", "[sec] x", "k\u00e9y = v", "k\ty = v", "k;y = v", "k=y = v"]


@pytest.fixture(scope="module")
def ini() -> Ini:
    _need(LIBINI, "libini-config5 (with sssd-common)")
    return Ini(LIBINI)


def test_sssd_reads_every_file_as_the_tokenizer_does(ini, tmp_path):
    disagreements = []
    for raw in sssd_corpus():
        # GIVEN a small sssd.conf holding the corpus line between two of ours
        text = f"[domain/default]\nid_provider = ldap\n{raw}\nldap_uri = ldaps://x\n"
        conf = tmp_path / "sssd.conf"
        conf.write_text(text, encoding="utf-8")
        rc, values = ini.read(conf)
        # WHEN the tokenizer reads it / THEN both refuse it, or both read the same keys and values
        try:
            entries = sssd.read(text)
        except Unreadable:
            if rc == 0:
                disagreements.append((raw, "libini_config accepted it", values))
            continue
        want = {(e.section, e.key): e.value for e in entries}
        if (rc, values) != (0, want):
            disagreements.append((raw, (rc, values), want))
    assert disagreements == []


def test_sssctl_accepts_the_sssd_conf_slurmgen_renders(tmp_path):
    # GIVEN the sssd.conf slurmgen renders for a directory (secrets mode precreated: the text with a placeholder)
    _need(SSSCTL, "sssd-tools")
    from slurmgen.spec.loader import parse_text
    spec = parse_text("t.yaml", (Path(__file__).parents[1] / "cases" / "bad" /
                                 "directory_password_in_extra_settings.yaml").read_text().replace(
        "  extraSssdConf: {ldap_default_authtok: hunter2, ldap_schema: rfc2307}\n", ""))
    conf = tmp_path / "sssd.conf"
    assert spec.directory is not None
    conf.write_text(sssd_conf_text(spec.directory))
    conf.chmod(0o600)
    (tmp_path / "conf.d").mkdir()
    # WHEN sssd's own checker reads it
    run = subprocess.run([str(SSSCTL), "config-check", "-c", str(conf), "-s", str(tmp_path / "conf.d")],
                         capture_output=True, text=True)
    # THEN it finds no issue, and the tokenizer reads the same file without refusal
    assert run.returncode == 0, run.stdout + run.stderr
    assert sssd.read(conf.read_text())
