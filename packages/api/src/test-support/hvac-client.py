"""Drives a running server with hvac, Vault's Python client, as its users would.

Reads VAULT_ADDR and VAULT_TOKEN (a root token of an unsealed server). Each step asserts what it
got back and prints one JSON line {"step": ..., ...} that the Jest side checks too; the first
failed assertion or client error ends the run with a traceback and a non-zero exit.
Only test values are printed, never the root token.
"""
import base64
import json
import os

import hvac
from hvac import exceptions


def report(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


def expect_error(kind, fn):
    """Runs fn, which must raise the hvac exception `kind`; returns the exception."""
    try:
        fn()
    except kind as err:
        return err
    raise AssertionError("expected %r" % (kind,))


def main():
    addr = os.environ["VAULT_ADDR"]
    root = hvac.Client(url=addr, token=os.environ["VAULT_TOKEN"])

    # Seal status and health
    assert root.is_authenticated()
    seal = root.sys.read_seal_status()
    assert seal["sealed"] is False and seal["initialized"] is True, seal
    assert root.sys.is_sealed() is False
    assert root.sys.is_initialized() is True
    health = root.sys.read_health_status(method="GET")
    assert health["initialized"] is True and health["sealed"] is False and health["standby"] is False, health
    head = root.sys.read_health_status(method="HEAD")
    assert head.status_code == 200, head.status_code
    report("seal-and-health", sealed=seal["sealed"], t=seal["t"], n=seal["n"], health=health["sealed"], head_status=head.status_code)

    # A KV v2 mount
    root.sys.enable_secrets_engine("kv", path="hvac-kv", options={"version": "2"}, description="from hvac")
    mounts = root.sys.list_mounted_secrets_engines()
    mount = mounts["data"]["hvac-kv/"] if "data" in mounts else mounts["hvac-kv/"]
    assert mount["type"] == "kv" and mount["options"]["version"] == "2", mount
    report("kv-mount", type=mount["type"], version=mount["options"]["version"], description=mount["description"])

    # Secrets: create, read, update, patch, list, versions, metadata, delete
    kv = root.secrets.kv.v2
    first = kv.create_or_update_secret("app/db", {"user": "app", "password": "pw-1"}, mount_point="hvac-kv")
    assert first["data"]["version"] == 1, first
    second = kv.create_or_update_secret("app/db", {"user": "app", "password": "pw-2"}, cas=1, mount_point="hvac-kv")
    assert second["data"]["version"] == 2, second
    conflict = expect_error(exceptions.InvalidRequest, lambda: kv.create_or_update_secret(
        "app/db", {"password": "late"}, cas=1, mount_point="hvac-kv"))
    patched = kv.patch("app/db", {"port": "5432"}, mount_point="hvac-kv")
    assert patched["data"]["version"] == 3, patched
    latest = kv.read_secret_version("app/db", mount_point="hvac-kv")
    assert latest["data"]["data"] == {"user": "app", "password": "pw-2", "port": "5432"}, latest["data"]["data"]
    assert latest["data"]["metadata"]["version"] == 3
    old = kv.read_secret_version("app/db", version=1, mount_point="hvac-kv")
    assert old["data"]["data"]["password"] == "pw-1"
    kv.create_or_update_secret("app/cache", {"url": "redis://cache"}, mount_point="hvac-kv")
    listed = kv.list_secrets("app", mount_point="hvac-kv")
    assert listed["data"]["keys"] == ["cache", "db"], listed
    report("kv-write-read", versions=[first["data"]["version"], second["data"]["version"], patched["data"]["version"]],
           data=latest["data"]["data"], v1_password=old["data"]["data"]["password"], keys=listed["data"]["keys"],
           cas_conflict=str(conflict))

    kv.update_metadata("app/db", max_versions=5, cas_required=False, mount_point="hvac-kv")
    meta = kv.read_secret_metadata("app/db", mount_point="hvac-kv")["data"]
    assert meta["max_versions"] == 5 and meta["current_version"] == 3 and meta["oldest_version"] in (0, 1), meta
    assert sorted(meta["versions"].keys(), key=int) == ["1", "2", "3"], meta["versions"]
    report("kv-metadata", max_versions=meta["max_versions"], current_version=meta["current_version"],
           versions=sorted(meta["versions"].keys(), key=int))

    kv.delete_latest_version_of_secret("app/db", mount_point="hvac-kv")
    # hvac raises InvalidPath on the 404 a deleted latest version answers with.
    expect_error(exceptions.InvalidPath, lambda: kv.read_secret_version("app/db", mount_point="hvac-kv"))
    kv.undelete_secret_versions("app/db", versions=[3], mount_point="hvac-kv")
    back = kv.read_secret_version("app/db", mount_point="hvac-kv")
    assert back["data"]["data"]["port"] == "5432", back
    kv.delete_secret_versions("app/db", versions=[2], mount_point="hvac-kv")
    kv.destroy_secret_versions("app/db", versions=[1], mount_point="hvac-kv")
    meta = kv.read_secret_metadata("app/db", mount_point="hvac-kv")["data"]
    v1, v2, v3 = meta["versions"]["1"], meta["versions"]["2"], meta["versions"]["3"]
    assert v1["destroyed"] is True and v2["deletion_time"] != "" and v3["deletion_time"] == "", meta["versions"]
    kv.delete_metadata_and_all_versions("app/db", mount_point="hvac-kv")
    expect_error(exceptions.InvalidPath, lambda: kv.read_secret_metadata("app/db", mount_point="hvac-kv"))
    listed = kv.list_secrets("app", mount_point="hvac-kv")
    assert listed["data"]["keys"] == ["cache"], listed
    report("kv-delete", undeleted=back["data"]["metadata"]["version"], v1_destroyed=v1["destroyed"],
           v2_deleted=v2["deletion_time"] != "", keys_after=listed["data"]["keys"])

    # A policy
    rules = 'path "hvac-kv/data/app/*" {\n  capabilities = ["create", "read", "update"]\n}\n'
    root.sys.create_or_update_policy("hvac-app", rules)
    policy = root.sys.read_policy("hvac-app")
    assert policy["data"]["rules"] == rules, policy
    policies = root.sys.list_policies()["data"]["policies"]
    assert "hvac-app" in policies, policies
    report("policy", rules=policy["data"]["rules"], listed="hvac-app" in policies)

    # A token with that policy: create, use, look up, renew, revoke
    created = root.auth.token.create(policies=["hvac-app"], ttl="1h", renewable=True)
    token = created["auth"]["client_token"]
    assert created["auth"]["policies"] == ["default", "hvac-app"] or created["auth"]["policies"] == ["hvac-app", "default"], created["auth"]
    app = hvac.Client(url=addr, token=token)
    assert app.secrets.kv.v2.read_secret_version("app/cache", mount_point="hvac-kv")["data"]["data"] == {"url": "redis://cache"}
    expect_error(exceptions.Forbidden, lambda: app.sys.read_policy("hvac-app"))
    looked = root.auth.token.lookup(token)["data"]
    assert sorted(looked["policies"]) == ["default", "hvac-app"] and looked["renewable"] is True, looked
    self_lookup = app.auth.token.lookup_self()["data"]
    assert self_lookup["accessor"] == created["auth"]["accessor"], self_lookup
    renewed = root.auth.token.renew(token, increment="2h")
    assert renewed["auth"]["lease_duration"] > 3600, renewed["auth"]
    listed_before = created["auth"]["accessor"] in root.auth.token.list_accessors()["data"]["keys"]
    root.auth.token.revoke(token)
    expect_error(exceptions.Forbidden, lambda: app.auth.token.lookup_self())
    listed_after = created["auth"]["accessor"] in root.auth.token.list_accessors()["data"]["keys"]
    assert listed_before and not listed_after
    report("token", policies=sorted(looked["policies"]), ttl=looked["ttl"], renewed_ttl=renewed["auth"]["lease_duration"],
           accessor_listed=listed_before, revoked=not listed_after)

    # Transit
    root.sys.enable_secrets_engine("transit", path="hvac-transit")
    root.secrets.transit.create_key("orders", mount_point="hvac-transit")
    key = root.secrets.transit.read_key("orders", mount_point="hvac-transit")["data"]
    plaintext = base64.b64encode(b"card 4111").decode()
    sealed = root.secrets.transit.encrypt_data("orders", plaintext, mount_point="hvac-transit")["data"]["ciphertext"]
    assert sealed.startswith("vault:v1:"), sealed
    opened = root.secrets.transit.decrypt_data("orders", sealed, mount_point="hvac-transit")["data"]["plaintext"]
    assert base64.b64decode(opened) == b"card 4111"
    report("transit", key_type=key["type"], ciphertext_prefix=sealed[:9], plaintext=base64.b64decode(opened).decode())

    # Response wrapping
    wrapped = root.auth.token.create(policies=["hvac-app"], ttl="10m", wrap_ttl="2m")
    info = wrapped["wrap_info"]
    assert wrapped.get("auth") is None and info["ttl"] == 120, wrapped
    unwrapped = root.sys.unwrap(info["token"])
    assert sorted(unwrapped["auth"]["policies"]) == ["default", "hvac-app"], unwrapped
    expect_error(exceptions.InvalidRequest, lambda: root.sys.unwrap(info["token"]))
    wrapped_read = root.read("hvac-kv/data/app/cache", wrap_ttl="60s")["wrap_info"]
    unwrapper = hvac.Client(url=addr, token=wrapped_read["token"])
    inner = unwrapper.sys.unwrap()
    assert inner["data"]["data"] == {"url": "redis://cache"}, inner
    report("wrapping", wrap_ttl=info["ttl"], creation_path=info["creation_path"],
           unwrapped_policies=sorted(unwrapped["auth"]["policies"]), read_data=inner["data"]["data"])

    # Namespaces: hvac 0.11 sends X-Vault-Namespace on every request of a client made with one.
    root.sys.create_namespace("hvac-team")
    namespaces = root.sys.list_namespaces()["data"]["keys"]
    assert "hvac-team/" in namespaces, namespaces
    team = hvac.Client(url=addr, token=os.environ["VAULT_TOKEN"], namespace="hvac-team")
    team.sys.enable_secrets_engine("kv", path="kv", options={"version": "2"})
    team.secrets.kv.v2.create_or_update_secret("svc", {"region": "eu"}, mount_point="kv")
    in_team = team.secrets.kv.v2.read_secret_version("svc", mount_point="kv")["data"]["data"]
    assert in_team == {"region": "eu"}, in_team
    # The same path from the root namespace is another mount (none), reached only with the prefix.
    expect_error((exceptions.InvalidPath, exceptions.InvalidRequest, exceptions.Forbidden),
                 lambda: root.secrets.kv.v2.read_secret_version("svc", mount_point="kv"))
    prefixed = root.secrets.kv.v2.read_secret_version("svc", mount_point="hvac-team/kv")["data"]["data"]
    assert prefixed == {"region": "eu"}, prefixed
    report("namespace", namespaces=namespaces, data=in_team, via_prefix=prefixed)

    report("done")


if __name__ == "__main__":
    main()
