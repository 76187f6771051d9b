"""toolnexus.tools.secret_files and _secret_scan: which names look like they hold secrets
(the built-in ones, at any depth and in any case, and those an application adds), and the
listing of such files in a workspace that the sandbox masks: it finds them at any depth,
skips the trees of other programs' making, stops at its bound saying so, and is walked again
only when a folder it read changed or it is invalidated."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import toolnexus.tools._secret_scan as secret_scan
from toolnexus.tools._secret_scan import Listing, SecretFiles
from toolnexus.tools.secret_files import SecretNames, looks_secret
from toolnexus.tools.workspace import ApprovalNeeded, Workspace

# The names issue 33 found read without a question, then those peers keep shut too.
NEWLY_SECRET = [
    ".envrc",
    "credentials.json",
    "service-account.json",
    "prod-service-account-key.json",
    "my-project-0123456789ab.json",
    "sub/.aws/credentials",
    "terraform.tfstate",
    "infra/prod.tfstate",
    "terraform.tfstate.backup",
    "deploy/.docker/config.json",
    "secrets.yaml",
    "secrets.yml",
    "chart/secrets.prod.yaml",
    ".htpasswd",
    ".vault-token",
    "release.keystore",
    "android/app/upload.JKS",
    "passwords.kdbx",
    "client_secret_1234.apps.googleusercontent.com.json",
    ".streamlit/secrets.toml",
    ".my.cnf",
    ".s3cfg",
]


@pytest.mark.parametrize("given", NEWLY_SECRET)
def test_a_secret_looking_name_asks_a_person_inside_the_root(tmp_path, given):
    (tmp_path / given).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / given).write_text("SECRET")
    with pytest.raises(ApprovalNeeded) as caught:
        Workspace(tmp_path).permit(given, None, action="read")
    request = caught.value.result.metadata["pending"]
    assert request["needs_person"] is True
    assert "Its name says it holds secrets; --yes does not answer this" in request["prompt"]


@pytest.mark.parametrize(
    "given",
    [
        "aws/credentials",  # not the .aws folder
        ".docker/daemon.json",
        "config.json",
        "docker/config.json",
        "credentials.py",
        "secrets.py",
        "main.tf",
        "key-0123.json",
        "id_rsa.pub",
        ".env.example",
        "service-account.md",
    ],
)
def test_names_beside_the_secret_ones_do_not_look_secret(given):
    assert not looks_secret(Path("/work") / given)


def test_names_an_application_adds_look_secret_in_any_case_and_at_the_end_of_a_path():
    names = SecretNames(["*.vault", "deploy/keys/*", ".env.example"])
    assert names.matches("/w/prod.VAULT") and names.matches("/w/sub/deploy/keys/main")
    assert names.matches("/w/.env.example")  # named by the application: a template no more
    assert names.matches("/w/.env") and names.matches("/w/id_rsa")  # the built-in ones stay
    assert not names.matches("/w/deploy/keys") and not names.matches("/w/keys/main")
    assert not looks_secret("/w/prod.vault")  # the built-in predicate is unchanged


@pytest.mark.parametrize("pattern", ["", "/etc/shadow", "~/.vault", "keys/", "a//b", "../x", "."])
def test_a_pattern_that_is_no_file_name_is_an_error_naming_it(pattern):
    with pytest.raises(ValueError, match="secret file pattern"):
        SecretNames([pattern])


def test_a_workspace_asks_about_the_names_its_application_adds(tmp_path):
    (tmp_path / "prod.vault").write_text("SECRET")
    (tmp_path / "notes.txt").write_text("notes")
    workspace = Workspace(tmp_path, secret_names=["*.vault"])
    with pytest.raises(ApprovalNeeded) as caught:
        workspace.permit("prod.vault", None, action="read")
    assert caught.value.result.metadata["pending"]["needs_person"] is True
    assert workspace.permit("notes.txt", None, action="read") == tmp_path / "notes.txt"
    assert workspace.secret_files.listing().files == (tmp_path / "prod.vault",)


# ------------------------------------------------------------------------------ the listing


def tree(root: Path, names: list[str]) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")


def test_the_listing_finds_the_secret_looking_files_at_any_depth(tmp_path):
    tree(tmp_path, [*NEWLY_SECRET, "a/b/c/.env", "src/main.py", ".env.example", "README.md"])
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / ".env").write_text("x")
    (tmp_path / "linked").symlink_to(tmp_path / "outside")  # a link to a folder: not followed
    (tmp_path / "key.pem").symlink_to(tmp_path / "README.md")  # a link named like a key
    listing = SecretFiles(tmp_path, SecretNames()).listing()
    found = [*NEWLY_SECRET, "a/b/c/.env", "key.pem", "outside/.env"]
    assert listing == Listing(tuple(sorted(tmp_path / name for name in found)), True)


def test_the_listing_skips_dependency_build_and_version_control_trees(tmp_path):
    tree(tmp_path, ["app/.env", "node_modules/pkg/.env", ".git/x/.env", "target/.env"])
    tree(tmp_path, [f"node_modules/pkg/file{i}.js" for i in range(300)])
    listing = SecretFiles(tmp_path, SecretNames(), max_entries=20).listing()
    assert listing == Listing((tmp_path / "app" / ".env",), True)  # 300 files never looked at


def test_the_listing_stops_at_its_bound_and_says_it_is_incomplete(tmp_path):
    keys = [f"d{i}/k{j}.pem" for i in range(10) for j in range(10)]  # 110 entries in all
    tree(tmp_path, keys)
    cut = SecretFiles(tmp_path, SecretNames(), max_entries=50).listing()
    assert not cut.complete and 0 < len(cut.files) < 50
    late = SecretFiles(tmp_path, SecretNames(), max_seconds=-1).listing()  # out of time at once
    assert late == Listing((), False)
    assert SecretFiles(tmp_path, SecretNames()).listing() == Listing(
        tuple(sorted(tmp_path / key for key in keys)), True
    )


def test_the_listing_walks_again_only_when_a_folder_changed_or_it_is_invalidated(
    tmp_path, monkeypatch
):
    tree(tmp_path, ["a/b/.env", "a/c/notes.txt", "d/readme.md"])
    opened: list[str] = []
    scandir = os.scandir
    monkeypatch.setattr(
        secret_scan.os, "scandir", lambda path: opened.append(path) or scandir(path)
    )
    files = SecretFiles(tmp_path, SecretNames())
    first = files.listing()
    walked = len(opened)
    assert first.files == (tmp_path / "a" / "b" / ".env",) and walked == 5  # root, a, b, c, d

    assert files.listing() == first and len(opened) == walked  # nothing read again
    (tmp_path / "a" / "c" / "notes.txt").write_text("changed")  # a file's text: no name
    assert files.listing() == first and len(opened) == walked

    (tmp_path / "a" / "c" / "credentials.json").write_text("{}")  # a new name, deep down
    assert files.listing().files == (
        tmp_path / "a" / "b" / ".env",
        tmp_path / "a" / "c" / "credentials.json",
    )
    (tmp_path / "a" / "b" / ".env").rename(tmp_path / "a" / "b" / "env.txt")
    assert files.listing().files == (tmp_path / "a" / "c" / "credentials.json",)

    walked = len(opened)
    files.invalidate()
    assert files.listing().files == (tmp_path / "a" / "c" / "credentials.json",)
    assert len(opened) > walked
