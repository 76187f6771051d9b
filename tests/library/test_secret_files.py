"""toolnexus.tools.secret_files: which names look like they hold secrets (the built-in
ones, at any depth and in any case, and those an application adds)."""

from __future__ import annotations

from pathlib import Path

import pytest

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
