"""toolnexus.tools.workspace: what the built-in tools may touch. A path is judged where it really
leads (`~`, `..`, every symlink resolved): inside the root it is permitted, outside it asks
(naming where it leads), a secret or special file is refused whatever anyone answers, and
path rules ("allow" / "ask" / "deny", the most specific first) decide before that; only an
exact "allow" rule opens a secret. An address that is not public asks before a fetch,
however it is spelled, unless a host rule decides. A person's yes counts only for the call
and the thing it was asked about."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

import toolnexus.tools._command_reach as command_reach
from toolnexus.tools.rules import checked_rules
from toolnexus.tools.sandbox import SandboxPolicy
from toolnexus.tools.tool import ToolContext
from toolnexus.tools.workspace import (
    ApprovalNeeded,
    Refused,
    Workspace,
    ask,
    holds_home,
    is_public,
    request_id,
)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "home"
    (folder / ".ssh").mkdir(parents=True)
    (folder / ".ssh" / "id_rsa").write_text("KEY")
    (folder / ".aws").mkdir()
    (folder / ".aws" / "credentials").write_text("AWS")
    (folder / ".aws" / "config").write_text("CFG")
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.fixture
def root(tmp_path) -> Path:
    folder = tmp_path / "work"
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("notes")
    return folder


def test_a_folder_holds_the_home_by_its_real_path(home, tmp_path):
    """The home, `/`, every folder above the home, and a link to any of them hold it;
    a folder in the home, a sibling of it and one whose name merely starts like it do not."""
    (tmp_path / "to-home").symlink_to(home)
    (tmp_path / "homework").mkdir()
    for folder in (home, "~", "/", tmp_path, tmp_path / "to-home", home / ".."):
        assert holds_home(folder), folder
    for folder in (home / ".ssh", "~/.aws", tmp_path / "homework", tmp_path / "to-home" / ".ssh"):
        assert not holds_home(folder), folder


def asked(
    workspace: Workspace, path: str, context: ToolContext | None = None, action: str = "read"
) -> str:
    """The question `permit` asks about `path` (fails if it does not ask)."""
    with pytest.raises(ApprovalNeeded) as caught:
        workspace.permit(path, context, action=action)
    return caught.value.result.metadata["pending"]["prompt"]


def refused(workspace: Workspace, path: str) -> str:
    with pytest.raises(Refused) as caught:
        workspace.permit(path, None, action="read")
    return str(caught.value)


def answered(workspace: Workspace, path: str, call: str = "call_1") -> ToolContext:
    """A context carrying the person's yes to what `permit` asked about `path`."""
    context = ToolContext(call_id=call)
    with pytest.raises(ApprovalNeeded) as caught:
        workspace.permit(path, context, action="read")
    context.answer = {"id": caught.value.result.metadata["pending"]["id"], "ok": True}
    return context


# ----------------------------------------------------------------------------- the root


def test_paths_inside_the_root_are_permitted_however_written(home, root):
    ws = Workspace(root)
    for given in (
        "notes.txt",
        "./notes.txt",
        "sub/../notes.txt",
        "sub//..//notes.txt",
        str(root / "notes.txt"),
        "missing/file.txt",
        ".",
        "sub/",
    ):
        assert ws.permit(given, None, action="read") == (root / given).resolve(), given


def test_a_root_given_through_a_symlink_is_the_folder_it_leads_to(home, root, tmp_path):
    (tmp_path / "link-to-work").symlink_to(root)
    ws = Workspace(tmp_path / "link-to-work")
    assert ws.root == root
    assert ws.permit("notes.txt", None, action="read") == root / "notes.txt"


def test_a_relative_root_is_taken_from_the_current_folder(home, root, monkeypatch):
    monkeypatch.chdir(root.parent)
    assert Workspace("work").root == root and Workspace().root == root.parent


@pytest.mark.parametrize(
    "given",
    [
        "..",
        "../work-evil/x",
        "sub/../../x",
        "sub/../../work/../x",
        "/etc/hostname",
        "~/x",
        "~root/x",
        "/",
    ],
)
def test_leaving_the_root_asks_first(home, root, given, tmp_path):
    (tmp_path / "work-evil").mkdir()  # beside the root, with its name as a prefix
    prompt = asked(Workspace(root), given)
    assert prompt.endswith(f", outside the workspace {root}?")
    assert prompt.startswith(f"read {given}")


def test_a_symlink_out_of_the_root_is_judged_and_named_where_it_leads(home, root, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "diary.txt").write_text("dear diary")
    (root / "sub" / "hop1").symlink_to("../hop2")
    (root / "hop2").symlink_to(outside / "diary.txt")  # a chain of two links
    (root / "out").symlink_to(outside)  # a linked folder
    ws = Workspace(root)
    assert asked(ws, "sub/hop1") == (
        f"read sub/hop1 (which is {outside / 'diary.txt'}), outside the workspace {root}?"
    )
    assert f"(which is {outside / 'diary.txt'})" in asked(ws, "out/diary.txt", action="write")
    assert asked(ws, "out/diary.txt", action="write").startswith("write out/diary.txt")
    (root / "inside").symlink_to("notes.txt")
    assert ws.permit("inside", None, action="read") == root / "notes.txt"


def test_a_symlink_loop_is_left_for_the_tool_to_fail_on(home, root):
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    assert Workspace(root).permit("a", None, action="read").parent == root


def test_a_yes_counts_for_that_call_and_that_path_only(home, root, tmp_path):
    for name in ("one.txt", "two.txt"):
        (tmp_path / name).write_text(name)
    ws = Workspace(root)
    yes = answered(ws, "../one.txt")
    assert ws.permit("../one.txt", yes, action="read") == tmp_path / "one.txt"
    asked(ws, "../two.txt", yes)  # another path: asked again
    elsewhere = ToolContext(call_id="call_2", answer=yes.answer)
    asked(ws, "../one.txt", elsewhere)  # another call: asked again
    for answer in ({**yes.answer, "ok": False}, "yes", None, {"ok": True}):
        asked(ws, "../one.txt", ToolContext(call_id="call_1", answer=answer))


def test_a_link_changed_after_the_yes_asks_again(home, root, tmp_path):
    (tmp_path / "harmless.txt").write_text("ok")
    (root / "link").symlink_to(tmp_path / "harmless.txt")
    ws = Workspace(root)
    yes = answered(ws, "link")
    (root / "link").unlink()
    (root / "link").symlink_to(tmp_path / "other.txt")
    assert "(which is " + str(tmp_path / "other.txt") in asked(ws, "link", yes)


def needs_person(workspace: Workspace, path: str, action: str = "read") -> bool:
    """Whether only a person answers what `permit` asks about `path` (never --yes)."""
    with pytest.raises(ApprovalNeeded) as caught:
        workspace.permit(path, None, action=action)
    return bool(caught.value.result.metadata["pending"].get("needs_person"))


def test_outside_the_root_a_blanket_yes_answers_only_where_a_sandboxed_command_reaches(
    home, root, tmp_path
):
    """--yes answers for what a command in the sandbox could read too (the system folders,
    the toolchains in the home folder, the sandbox's read and write folders; only its write
    folders for a change), whatever the sandbox's mode; anything else only a person."""
    ws = Workspace(
        root,
        sandbox=SandboxPolicy(mode="off", read=("~/shared",), write=(str(tmp_path / "cache"),)),
    )
    for given in ("/etc/hostname", "/usr/lib", "~/.cargo/bin/cargo", "~/shared/doc.txt"):
        assert not needs_person(ws, given), given
    for given in ("../cache/x", "../cache"):
        assert not needs_person(ws, given, "write") and not needs_person(ws, given), given
    for given in ("~/.bash_history", "~/id_rsa.bak", "~/notes.txt", "~/.cargo/env", "~"):
        assert needs_person(ws, given), given
    assert needs_person(ws, str(tmp_path / "elsewhere.txt"))  # /tmp: the sandbox's is its own
    assert needs_person(ws, "/etc/new.conf", "write") and needs_person(ws, "~/shared/x", "edit")
    inside_ask = Workspace(root, paths={str(root / "notes.txt"): "ask"})
    assert not needs_person(inside_ask, "notes.txt")  # a rule asks: --yes answers inside


def test_a_home_folder_inside_a_system_folder_is_not_opened_by_a_blanket_yes(
    home, root, tmp_path, monkeypatch
):
    monkeypatch.setattr(command_reach, "SYSTEM_FOLDERS", (str(tmp_path),))
    ws = Workspace(root)
    assert not needs_person(ws, "../elsewhere.txt")
    assert needs_person(ws, "~/notes.txt")


# ----------------------------------------------------------------------------- secrets


@pytest.mark.parametrize(
    "given",
    [
        "~/.ssh/id_rsa",
        "~/.ssh",
        "~/.ssh/",
        "~/.ssh/../.ssh/id_rsa",
        "~/.aws/credentials",
        "~/.netrc",
        "~/.gnupg/private-keys-v1.d/x.key",
        "~/.docker/config.json",
        "~/.kube/config",
        "~/.config/gcloud/credentials.db",
        "~/.npmrc",
        "~/.cargo/credentials.toml",
        "../server.pem",
        "../tls.key",
        "../cert.p12",
        "../id_ed25519",
        "../.npmrc",
        "/proc/self/environ",
        "/proc/thread-self/environ",
        "/proc/self/mem",
    ],
)
def test_a_secret_is_refused_in_its_place_and_by_its_name_outside_the_root(home, root, given):
    assert refused(Workspace(root), given).endswith(
        "holds secrets: no tool may read or change it (a path rule naming it exactly is the "
        "only way to allow it)"
    )


@pytest.mark.parametrize(
    "given",
    [
        "server.pem",
        "sub/tls.key",
        "cert.p12",
        "id_ed25519",
        "sub/id_rsa",
        ".env",
        ".env.production",
        ".npmrc",
        ".netrc",
        ".pypirc",
    ],
)
def test_what_looks_secret_inside_the_root_asks_a_person(home, root, given):
    """Inside the workspace such a file is the project's, but may hold its secrets: a
    person is asked, and --yes does not answer (the request says so)."""
    with pytest.raises(ApprovalNeeded) as caught:
        Workspace(root).permit(given, None, action="read")
    request = caught.value.result.metadata["pending"]
    assert request["needs_person"] is True
    assert request["prompt"].startswith(
        f"read {given} (which is {root / given})? Its name says it holds secrets"
    )


def test_an_env_template_is_not_a_secret(home, root):
    assert Workspace(root).permit(".env.example", None, action="read") == root / ".env.example"


@pytest.mark.parametrize(
    "given",
    [
        "~/.SSH/config",
        "~/.Aws/credentials",
        "~/.Docker/Config.json",
        "../SERVER.PEM",
        "../TLS.Key",
        "../ID_RSA",
        "../.ENV",
        "../.Env.local",
        "cfg/KEYS.json",
    ],
)
def test_a_secret_is_refused_whatever_case_its_name_is_written_in(home, root, given):
    ws = Workspace(root, secrets=[root / "cfg" / "keys.json"])
    assert "holds secrets" in refused(ws, given)


@pytest.mark.parametrize(
    "given",
    [
        "~/.sshx/id",
        "~/.ssh-backup/notes",
        "~/.aws.txt",
        "~/.netrc.example/x",
        "id_rsa.pub",
        "server.pem.txt",
        ".envrc.sample",
        "environment",
        "config.json",
        "aws/credentials",
        "credentials.py",
        "secrets.py",
        "main.tf",
        "key-0123.json",
        "/proc/self/status",
    ],
)
def test_what_only_looks_like_a_secret_is_not_one(home, root, given):
    ws = Workspace(root, paths={"~/**": "allow", "/proc/**": "allow"})
    assert ws.permit(given, None, action="read")


def test_links_that_lead_to_a_secret_are_refused(home, root):
    (root / "innocent.txt").symlink_to(home / ".ssh" / "id_rsa")
    (root / "keys").symlink_to(home / ".aws")
    ws = Workspace(root)
    assert refused(ws, "innocent.txt").startswith(f"{home / '.ssh' / 'id_rsa'} holds secrets")
    assert refused(ws, "keys/config").startswith(f"{home / '.aws' / 'config'} holds secrets")
    with open(home / ".ssh" / "id_rsa") as handle:  # an open descriptor leads there too
        assert refused(ws, f"/proc/self/fd/{handle.fileno()}").startswith(
            f"{home / '.ssh' / 'id_rsa'} holds"
        )
    assert refused(ws, f"/proc/self/root{home}/.ssh/id_rsa").startswith(
        f"{home / '.ssh' / 'id_rsa'} holds"
    )


def test_a_home_given_through_a_symlink_still_guards_its_secrets(home, root, tmp_path, monkeypatch):
    (tmp_path / "home-link").symlink_to(home)
    monkeypatch.setenv("HOME", str(tmp_path / "home-link"))
    assert "holds secrets" in refused(Workspace(root), str(home / ".ssh" / "id_rsa"))


def test_an_env_file_asks_inside_the_root_and_is_a_secret_outside(home, root, tmp_path):
    for folder in (root, tmp_path):
        (folder / ".env").write_text("K=V")
        (folder / ".env.local").write_text("K=V")
    ws = Workspace(root, paths={str(tmp_path / "*"): "allow"})
    assert "says it holds secrets" in asked(ws, ".env")
    assert "says it holds secrets" in asked(ws, ".env.local")
    assert "holds secrets" in refused(ws, "../.env")
    assert "holds secrets" in refused(ws, "../.env.local")


def test_an_applications_own_secrets_are_refused_with_all_they_hold(home, root, tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "keys.json").write_text("{}")
    ws = Workspace(root, secrets=[tmp_path / "app", "~/../keys.json"])
    for given in ("../app", "../app/threads/t.db", "../keys.json"):
        assert "holds secrets" in refused(ws, given), given
    (root / "cfg").symlink_to(tmp_path / "app")
    assert "holds secrets" in refused(ws, "cfg/config.toml")


def test_only_an_exact_allow_rule_opens_a_secret(home, root):
    def reads(rules: dict[str, str], given: str) -> bool:
        ws = Workspace(root, paths=rules)
        try:
            ws.permit(given, None, action="read")
        except Refused:
            return False
        return True

    assert reads({"~/.aws/config": "allow"}, "~/.aws/config")
    assert not reads({"~/.aws/config": "allow"}, "~/.aws/credentials")
    assert reads({"~/.aws": "allow"}, "~/.aws/credentials")  # a secret folder named exactly
    for rules in (
        {"~/.aws/*": "allow"},
        {"~/.aws/confi?": "allow"},
        {"~/**": "allow"},
        {"~": "allow"},
        {str(home.parent): "allow"},
        {"~/.aws/config": "ask"},
        {"/": "allow"},
    ):
        assert not reads(rules, "~/.aws/config"), rules
    assert not reads({"~/.aws": "allow", "~/.aws/config": "deny"}, "~/.aws/config")


# ----------------------------------------------------------------------------- special files


def test_fifos_devices_and_sockets_are_refused_inside_the_root_too(home, root, monkeypatch):
    os.mkfifo(root / "pipe")
    (root / "null").symlink_to("/dev/null")
    monkeypatch.chdir(root)  # a socket's path has a short limit: bind it by a relative one
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("sock")
        ws = Workspace(root)
        for given, where in (
            ("pipe", root / "pipe"),
            ("null", "/dev/null"),
            ("sock", root / "sock"),
            ("/dev/tty", "/dev/tty"),
        ):
            assert refused(ws, given) == (
                f"{where} is a special file (a device, FIFO or socket): tools read only files"
            ), given


# ----------------------------------------------------------------------------- path rules


def test_path_rules_take_the_exact_then_the_longest_pattern(home, root, tmp_path):
    shared = tmp_path / "shared"
    (shared / "private").mkdir(parents=True)
    rules = {
        str(shared / "*"): "allow",
        str(shared / "private" / "*"): "deny",
        str(shared / "private" / "ok.txt"): "allow",
        str(shared / "a*"): "ask",
    }
    ws = Workspace(root, paths=rules)
    assert ws.permit("../shared/notes", None, action="read") == shared / "notes"
    assert (
        refused(ws, "../shared/private/plan") == f"{shared / 'private' / 'plan'} is denied "
        "by a path rule"
    )
    assert ws.permit("../shared/private/ok.txt", None, action="read")
    assert asked(ws, "../shared/agenda") == (
        f"read ../shared/agenda (which is {shared / 'agenda'})? (a path rule asks first)"
    )


def test_a_rule_on_a_folder_covers_everything_under_it(home, root, tmp_path):
    (tmp_path / "data" / "deep" / "er").mkdir(parents=True)
    ws = Workspace(root, paths={str(tmp_path / "data"): "allow"})
    assert ws.permit("../data/deep/er/x.csv", None, action="write")
    asked(ws, "../data-other/x")  # a sibling whose name starts the same


def test_rules_decide_inside_the_root_too(home, root):
    ws = Workspace(root, paths={str(root / "sub"): "deny", str(root / "notes.txt"): "ask"})
    assert refused(ws, "sub/x") == f"{root / 'sub' / 'x'} is denied by a path rule"
    assert asked(ws, str(root / "notes.txt"), action="edit") == (
        f"edit {root / 'notes.txt'}? (a path rule asks first)"
    )


def test_a_rule_is_judged_where_it_leads_and_with_home_expanded(home, root, tmp_path):
    real = tmp_path / "real-notes"
    real.mkdir()
    (home / "notes").symlink_to(real)
    ws = Workspace(root, paths={"~/notes/*": "allow"})
    assert ws.permit("~/notes/today.md", None, action="read") == real / "today.md"
    assert ws.permit(str(real / "today.md"), None, action="read") == real / "today.md"


@pytest.mark.parametrize("decision", ["Allow", "yes", "", None, "always", True])
def test_a_rule_with_an_unknown_decision_is_an_error_naming_it(decision):
    with pytest.raises(ValueError) as caught:
        checked_rules({"~/ok": "allow", "~/x": decision}, "path rule")
    assert str(caught.value) == (f'path rule \'~/x\' = {decision!r}: use "allow", "ask" or "deny"')
    with pytest.raises(ValueError, match="host rule"):
        Workspace(hosts={"h": decision})


def test_rules_are_ordered_exact_first_then_longest():
    rules = {"a*": "ask", "abc": "deny", "ab*": "allow", "a": "allow", "a?c": "deny"}
    assert checked_rules(rules, "rule") == [
        ("abc", "deny"),
        ("a", "allow"),
        ("ab*", "allow"),
        ("a?c", "deny"),
        ("a*", "ask"),
    ]
    assert checked_rules(None, "rule") == []


# ----------------------------------------------------------------------------- addresses


def permit_address(
    ws: Workspace,
    host: str,
    addresses: list[str],
    port: int = 80,
    context: ToolContext | None = None,
) -> str | None:
    """The question a fetch of http://host:port asks first, or None if it goes ahead."""
    try:
        ws.permit_address(f"http://{host}:{port}", host, port, addresses, context)
    except ApprovalNeeded as need:
        return need.result.metadata["pending"]["prompt"]
    return None


def test_a_name_with_any_address_that_is_not_public_asks_naming_those(root):
    ws = Workspace(root)
    assert permit_address(ws, "rebind.example", ["93.184.216.34", "10.0.0.5", "::1"]) == (
        "fetch http://rebind.example:80? rebind.example (10.0.0.5, ::1) is not a public "
        "address (loopback, private network or link-local)"
    )
    assert permit_address(ws, "169.254.169.254", ["169.254.169.254"]).startswith(
        "fetch http://169.254.169.254:80? 169.254.169.254 is not a public address"
    )


def test_every_host_asks_a_person_once_a_session(root):
    """Anything a model read can leave in a URL, so a fetch from a new host asks, public or
    not; a yes holds for that origin for the rest of the session, and --yes does not answer
    it."""
    ws = Workspace(root)
    subject = "origin:http://example.com:80"
    with pytest.raises(ApprovalNeeded) as caught:
        ws.permit_address("http://example.com:80", "example.com", 80, ["93.184.216.34"], None)
    request = caught.value.result.metadata["pending"]
    assert request["prompt"] == (
        "fetch http://example.com:80? (the first fetch from this host; yes holds for the session)"
    )
    assert request["needs_person"] is True
    yes = ToolContext(
        call_id="c1", answer={"id": request_id(ToolContext(call_id="c1"), subject), "ok": True}
    )
    assert permit_address(ws, "example.com", ["93.184.216.34"], context=yes) is None
    assert permit_address(ws, "example.com", ["93.184.216.34"]) is None  # remembered
    assert permit_address(ws, "example.com", ["93.184.216.34"], port=8080) is not None
    assert permit_address(Workspace(root), "example.com", ["93.184.216.34"]) is not None


def test_host_rules_decide_by_host_or_host_and_port(root):
    ws = Workspace(
        root,
        hosts={
            "localhost:11434": "allow",
            "*.internal": "allow",
            "evil.example": "deny",
            "example.org:*": "ask",
        },
    )
    assert permit_address(ws, "localhost", ["127.0.0.1"], 11434) is None
    assert permit_address(ws, "localhost", ["127.0.0.1"], 8080) is not None  # another port
    assert permit_address(ws, "db.internal", ["10.1.1.1"], 5432) is None
    assert permit_address(ws, "example.org", ["93.184.216.34"]) == (
        "fetch http://example.org:80? (a host rule asks first)"
    )
    assert permit_address(ws, "example.net", ["93.184.216.34"]) is not None  # no rule
    with pytest.raises(Refused, match="^EVIL.example is denied by a host rule$"):
        permit_address(ws, "EVIL.example", ["93.184.216.34"])


def test_host_rules_name_an_ipv6_address_in_brackets_as_a_url_does(root):
    ws = Workspace(root, hosts={"[::1]:8080": "allow", "[fd00::5]": "allow", "[fe80::*]": "deny"})
    assert permit_address(ws, "::1", ["::1"], 8080) is None
    assert permit_address(ws, "::1", ["::1"], 8081) is not None  # another port
    assert permit_address(ws, "fd00::5", ["fd00::5"], 5432) is None  # no port: any port
    with pytest.raises(Refused, match="^fe80::1 is denied by a host rule$"):
        permit_address(ws, "fe80::1", ["fe80::1"])


def test_host_rules_match_whatever_case_they_are_written_in(root):
    ws = Workspace(root, hosts={"LocalHost:11434": "allow", "*.CORP.example": "deny"})
    assert permit_address(ws, "localhost", ["127.0.0.1"], 11434) is None
    with pytest.raises(Refused, match="is denied by a host rule"):
        permit_address(ws, "Wiki.corp.example", ["10.0.0.9"])


def test_a_yes_to_a_private_address_counts_for_that_origin_and_call_only(root):
    ws = Workspace(root)
    subject = "origin:http://10.0.0.5:80"
    yes = ToolContext(
        call_id="c1", answer={"id": request_id(ToolContext(call_id="c1"), subject), "ok": True}
    )
    assert permit_address(ws, "10.0.0.5", ["10.0.0.5"], context=yes) is None
    assert permit_address(ws, "10.0.0.5", ["10.0.0.5"], port=81, context=yes) is not None
    assert (
        permit_address(
            ws, "10.0.0.5", ["10.0.0.5"], context=ToolContext(call_id="c2", answer=yes.answer)
        )
        is not None
    )


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.255.255.254",
        "0.0.0.0",
        "0.1.2.3",
        "10.0.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "198.18.0.1",
        "192.0.2.1",
        "240.0.0.1",
        "224.0.0.251",
        "255.255.255.255",
        "::",
        "::1",
        "fe80::1",
        "fe80::1%eth0",
        "fc00::1",
        "fd12:3456::1",
        "ff02::1",
        "2001:db8::1",
        "::ffff:127.0.0.1",
        "::ffff:7f00:1",
        "::FFFF:10.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::127.0.0.1",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b::7f00:1%1",
        "2002:7f00:1::1",
        "2002:a00:1::",
        "2001:0:4136:e378:8000:63bf:80ff:fffe",
    ],
)
def test_an_address_that_is_not_public_in_any_spelling(address):
    assert not is_public(address)


@pytest.mark.parametrize(
    "address",
    [
        "::127.0.0.1",
        "::10.0.0.1",
        "::a9fe:a9fe",  # IPv4-compatible
        "::ffff:0:127.0.0.1",
        "::ffff:0:a00:1",  # IPv4-translated (SIIT)
        "64:ff9b:1::a00:1",
        "64:ff9b:1:ffff::1",  # local-use NAT64: translated to anything
        "fec0::1",
        "fef0:1::2",  # site-local: the old private networks of IPv6
    ],
)
def test_an_ipv4_address_inside_ipv6_or_an_old_private_range_is_not_public(address):
    assert not is_public(address)


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.216.34",
        "2606:4700:4700::1111",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
        "2002:808:808::1",
        "::8.8.8.8",
        "::ffff:0:808:808",
    ],
)
def test_a_public_address_in_any_spelling(address):
    assert is_public(address)


@pytest.mark.parametrize(
    "text",
    [
        "localhost",
        "",
        "1.2.3",
        "127.1",
        "0x7f.0.0.1",
        "2130706433",
        "127.0.0.1:80",
        "[::1]",
        "::1::",
    ],
)
def test_a_name_or_a_malformed_address_is_not_judged_as_an_address(text):
    with pytest.raises(ValueError):
        is_public(text)


# ----------------------------------------------------------------------------- asking


def test_asking_suspends_with_a_request_its_re_run_can_recognise():
    context = ToolContext(call_id="call_9")
    with pytest.raises(ApprovalNeeded) as caught:
        ask(context, "path:/x", "read /x?")
    need = caught.value
    request = need.result.metadata["pending"]
    assert request == {
        "id": request_id(context, "path:/x"),
        "kind": "approval",
        "prompt": "read /x?",
    }
    assert need.result.output == str(need) == "waiting for the user: read /x?"
    assert request_id(context, "path:/x") == request_id(ToolContext(call_id="call_9"), "path:/x")
    assert request_id(context, "path:/y") != request["id"]
    assert request_id(None, "path:/x") != request["id"]
    context.answer = {"id": request["id"], "ok": True}
    ask(context, "path:/x", "read /x?")  # answered: goes on
