"""No secret is printed or written (issue 40, items 2 and 3): a marked secret passed through
every CLI subcommand (malformed --storage-options, a URL with user:password@, a presigned
URL, an endpoint_url with credentials) and through API error paths is found in no output
and no file."""

from __future__ import annotations

import json
import os
import traceback

import nbformat
import pandas as pd
import pytest

import interactive_recsys as irs
from interactive_recsys import ops
from interactive_recsys.cli._main import main
from interactive_recsys.redact import MASK, redact_options, redact_text, redact_url

MARK = "SECRET-MARK-9f2c"
#: nothing listens on port 1: every request fails at once
HOST = "127.0.0.1:1"
FAST = {"config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 1}}


def _all_files_text(folder) -> str:
    out = []
    for root, _, names in os.walk(folder):
        for name in names:
            with open(os.path.join(root, name), "rb") as f:
                out.append(f.read().decode("utf-8", "replace"))
            out.append(os.path.join(root, name))  # names too
    return "\n".join(out)


@pytest.fixture
def place(tmp_path, monkeypatch):
    """A working folder with a saved workflow, a saved model, data and a notebook."""
    monkeypatch.chdir(tmp_path)
    frame = pd.DataFrame({"c": ["x", "y", "x"], "user_id": [1, 2, 1], "item_id": [5, 6, 6]})
    frame.to_parquet(tmp_path / "data.parquet")
    irs.Workflow(["c"] >> ops.Categorify()).fit(frame).save(tmp_path / "wf")
    irs.models.Popularity().fit(frame).save(tmp_path / "model")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("1", execution_count=1, outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="hello")])]
    nbformat.write(nb, tmp_path / "nb.ipynb")
    return tmp_path


BAD_JSON = [
    '{"key": "AKID", "secret": "' + MARK + '"',           # a missing brace
    "{'secret': '" + MARK + "'}",                          # single quotes
    '{"secret": "' + MARK + '",}',                         # a trailing comma
    '["' + MARK + '"]',                                    # not an object
]


def _commands(options: str) -> dict[str, list[str]]:
    return {
        "run": ["run", "--workflow", "wf", "--input", "data.parquet", "--output", "out-run",
                "--local", "--storage-options", options],
        "update": ["update", "--workflow", "wf", "--input", "data.parquet", "--output",
                   "out-update", "--local", "--storage-options", options],
        "predict": ["predict", "--model", "model", "--users", "data.parquet", "--output",
                    "out-predict", "--local", "--storage-options", options],
        "clean": ["clean", "s3://bucket/out", "--storage-options", options],
        "report": ["report", "s3://bucket/nb.ipynb", "-o", "out.html", "--storage-options",
                   options],
    }


def _run(argv: list[str], capfd) -> tuple[int, str]:
    rc = main(argv)
    out, err = capfd.readouterr()
    return rc, out + err


@pytest.mark.parametrize("text", BAD_JSON)
def test_malformed_storage_options_are_reported_by_position_for_every_subcommand(
        place, capfd, text):
    for name, argv in _commands(text).items():
        rc, printed = _run(argv, capfd)
        assert rc == 2, (name, printed)
        assert MARK not in printed, name
        assert "--storage-options" in printed, name
        if text.startswith("{"):
            assert "line 1, column" in printed and "offset" in printed, name
    assert MARK not in _all_files_text(place)


def _url_cases() -> list[tuple[str, list[str]]]:
    creds = json.dumps({"key": "AKID" + MARK, "secret": MARK, **FAST,
                        "client_kwargs": {"endpoint_url": f"http://admin:{MARK}@{HOST}"}})
    presigned = (f"https://{HOST}/b/data.parquet?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                 f"&X-Amz-Credential=AKID{MARK}%2F20261127&X-Amz-Signature={MARK}"
                 f"&X-Amz-Security-Token={MARK}&sig={MARK}&token={MARK}")
    userinfo = f"https://user:{MARK}@{HOST}"
    return [
        ("run userinfo workflow", ["run", "--workflow", f"{userinfo}/wf", "--input",
                                   "data.parquet", "--output", "o1", "--local"]),
        ("run presigned input", ["run", "--workflow", "wf", "--input", presigned,
                                 "--output", "o2", "--local"]),
        ("run endpoint", ["run", "--workflow", "s3://bucket/wf", "--input", "data.parquet",
                          "--output", "o3", "--local", "--storage-options", creds]),
        ("run output", ["run", "--workflow", "wf", "--input", "data.parquet", "--output",
                        f"{userinfo}/out", "--local"]),
        ("update userinfo", ["update", "--workflow", "wf", "--input", f"{userinfo}/d.parquet",
                             "--output", "o4", "--local"]),
        ("update endpoint", ["update", "--workflow", "s3://bucket/wf", "--input",
                             "data.parquet", "--output", "o5", "--local",
                             "--storage-options", creds]),
        ("predict presigned", ["predict", "--model", presigned.replace("data.parquet", "m"),
                               "--users", "data.parquet", "--output", "o6", "--local"]),
        ("predict endpoint", ["predict", "--model", "s3://bucket/model", "--users",
                              "data.parquet", "--output", "o7", "--local",
                              "--storage-options", creds]),
        ("clean endpoint", ["clean", "s3://bucket/out", "--storage-options", creds]),
        ("clean userinfo", ["clean", f"{userinfo}/out"]),
        ("report endpoint", ["report", "s3://bucket/nb.ipynb", "-o", "r.html",
                             "--storage-options", creds]),
        ("report userinfo", ["report", f"{userinfo}/nb.ipynb", "-o", "r2.html"]),
        ("report output", ["report", "nb.ipynb", "-o", "s3://bucket/r.html",
                           "--storage-options", creds]),
    ]


def test_urls_with_credentials_are_never_printed_by_any_subcommand(place, capfd):
    for name, argv in _url_cases():
        rc, printed = _run(argv, capfd)
        assert rc != 0 or name == "clean userinfo", (name, printed)  # http: nothing staged
        assert MARK not in printed, (name, printed)
        assert printed.strip(), name  # it said something
    assert MARK not in _all_files_text(place)


def _chain(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


@pytest.mark.parametrize("call", [
    lambda: irs.Dataset(f"https://user:{MARK}@{HOST}/d.parquet"),
    lambda: irs.Dataset(f"https://{HOST}/d.parquet?X-Amz-Signature={MARK}&sig={MARK}"),
    lambda: irs.Dataset("s3://bucket/d.parquet", storage_options={
        "key": "AKID" + MARK, "secret": MARK, **FAST,
        "client_kwargs": {"endpoint_url": f"http://u:{MARK}@{HOST}"}}),
    lambda: irs.Workflow.load(f"https://user:{MARK}@{HOST}/wf"),
    lambda: irs.models.load(f"https://{HOST}/m?X-Amz-Credential={MARK}"),
    lambda: ops.JoinExternal(f"https://user:{MARK}@{HOST}/side.parquet", on="c"),
])
def test_api_errors_hold_no_secret_in_their_text_or_traceback(call):
    with pytest.raises(Exception) as info:
        call()
    assert MARK not in _chain(info.value)
    assert MARK not in repr(info.value.args)


def test_saving_to_a_url_with_a_password_reports_no_secret(tmp_path):
    wf = irs.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": ["x"]}))
    with pytest.raises(Exception) as info:
        wf.save(f"https://user:{MARK}@{HOST}/saved")
    assert MARK not in _chain(info.value)


def test_a_saved_workflow_never_stores_storage_options(tmp_path):
    options = {"key": "AKID" + MARK, "secret": MARK, "anon": False}
    wf = irs.Workflow(["c"] >> ops.Categorify(), storage_options=options)
    wf.fit(pd.DataFrame({"c": ["x", "y"]})).save(tmp_path / "saved")
    assert MARK not in _all_files_text(tmp_path)


def test_the_studio_feedback_and_reports_mask_secrets(tmp_path):
    from interactive_recsys.report._notebook_report import notebook_html
    from interactive_recsys.ui.builder.views._feedback import Feedback

    feedback = Feedback(["dataset"])
    feedback.say(f"Cannot open 'https://u:{MARK}@h/x'", "error", "dataset",
                 details=f"Traceback: endpoint_url='http://a:{MARK}@m:9000'")
    assert MARK not in feedback.areas["dataset"].value and MASK in feedback.areas[
        "dataset"].value
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x", execution_count=1, outputs=[
        nbformat.v4.new_output("error", ename="StorageError",
                               evalue=f"Cannot access 's3://{MARK}:{MARK}@b/k'",
                               traceback=[f"s3://AKID:{MARK}@b/k"]),
        nbformat.v4.new_output("stream", name="stdout",
                               text=f"{{'secret': '{MARK}', 'anon': False}}")])]
    page = notebook_html(nb, title="t")
    assert MARK not in page and "anon" in page


# ---- the rule itself --------------------------------------------------------------------------
def test_the_redaction_rule():
    assert redact_url(f"https://user:{MARK}@host/p?a=1") == "https://***@host/p?a=1"
    assert redact_url("https://token123@github.com/x") == "https://***@github.com/x"
    assert redact_url("abfs://container@acct.dfs.core.windows.net/p") == \
        "abfs://container@acct.dfs.core.windows.net/p"
    assert redact_url(f"https://h/k?X-Amz-Date=1&X-Amz-Signature={MARK}#frag") == \
        "https://h/k?X-Amz-Date=1&X-Amz-Signature=***#frag"
    nested = {"anon": False, "key": "AKID", "client_kwargs": {
        "endpoint_url": f"http://minio:{MARK}@m:9000", "region_name": "eu",
        "aws_session_token": MARK}, "config_kwargs": {"s3": {"addressing_style": "path"}},
        "credentials": {"type": "service_account", "private_key": MARK}}
    masked = redact_options(nested)
    assert MARK not in json.dumps(masked)
    assert masked["client_kwargs"]["region_name"] == "eu" and masked["anon"] is False
    assert masked["config_kwargs"] == nested["config_kwargs"]
    # a secret met once is masked wherever it appears later, even unquoted
    assert redact_text(f"the server said: {MARK} is not valid") == \
        "the server said: *** is not valid"
    text = f"AccountName=a;AccountKey={MARK};EndpointSuffix=core.windows.net"
    assert redact_text(text) == "AccountName=a;AccountKey=***;EndpointSuffix=core.windows.net"
    assert redact_text("no secrets: Categorify(freq_threshold=3) on 'c'") == \
        "no secrets: Categorify(freq_threshold=3) on 'c'"


def test_a_store_refusing_marked_credentials_prints_none_of_them(place, capfd):
    """A real S3 server with authentication on: its refusal (and botocore's error) may quote
    the access key; neither the key nor the secret is printed or written."""
    from tests import s3_server

    server = s3_server.start(env={"INITIAL_NO_AUTH_ACTION_COUNT": "0"})
    try:
        options = json.dumps({**server.options("AKID" + MARK, MARK), **FAST})
        for argv in (["run", "--workflow", "wf", "--input", "s3://irs-auth/d.parquet",
                      "--output", "o-auth", "--local", "--storage-options", options],
                     ["run", "--workflow", "wf", "--input", "data.parquet", "--output",
                      "s3://irs-auth/out", "--local", "--storage-options", options],
                     ["clean", "s3://irs-auth/out", "--storage-options", options]):
            rc, printed = _run(argv, capfd)
            assert rc != 0 and "s3://irs-auth" in printed, printed
            assert MARK not in printed, printed
        assert MARK not in _all_files_text(place)
    finally:
        server.stop()
