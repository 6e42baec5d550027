#!/usr/bin/env python3
"""An independent Kubernetes client for amesh apiserver tests: Debian's python3-kubernetes (the official
Python client, its own HTTP stack and its own decoding). Runs one scenario against the kubeconfig given and
prints one JSON object with what it observed; the TypeScript test asserts on it."""
import json
import sys
import threading

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException


def crud_and_watch(api_client, ns):
    core = client.CoreV1Api(api_client)
    out = {}
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    created = core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cfg", labels={"app": "x"}), data={"k": "v1"}))
    out["created_rv"] = created.metadata.resource_version
    out["uid"] = created.metadata.uid
    # A watch from the create's resourceVersion sees the later changes, in order.
    events = []
    started = threading.Event()

    def watcher():
        w = watch.Watch()
        started.set()
        for ev in w.stream(core.list_namespaced_config_map, ns, resource_version=created.metadata.resource_version, timeout_seconds=10):
            events.append([ev["type"], ev["object"].metadata.name, ev["object"].data.get("k") if ev["object"].data else None])
            if ev["type"] == "DELETED":
                w.stop()

    t = threading.Thread(target=watcher)
    t.start()
    started.wait()
    got = core.read_namespaced_config_map("cfg", ns)
    got.data["k"] = "v2"
    replaced = core.replace_namespaced_config_map("cfg", ns, got)
    out["replaced_rv"] = replaced.metadata.resource_version
    # A stale resourceVersion is a 409 Conflict.
    got.data["k"] = "stale"
    try:
        core.replace_namespaced_config_map("cfg", ns, got)
        out["stale_status"] = 200
    except ApiException as e:
        out["stale_status"] = e.status
        out["stale_reason"] = json.loads(e.body).get("reason")
    core.patch_namespaced_config_map("cfg", ns, {"data": {"k": "v3"}})
    listed = core.list_namespaced_config_map(ns, label_selector="app=x")
    out["listed"] = [i.metadata.name for i in listed.items]
    out["listed_none"] = len(core.list_namespaced_config_map(ns, label_selector="app=y").items)
    core.delete_namespaced_config_map("cfg", ns)
    try:
        core.read_namespaced_config_map("cfg", ns)
        out["after_delete"] = 200
    except ApiException as e:
        out["after_delete"] = e.status
    t.join(15)
    out["events"] = events
    return out


def tokens(api_client, ns):
    core = client.CoreV1Api(api_client)
    auth = client.AuthenticationV1Api(api_client)
    out = {}
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    core.create_namespaced_service_account(ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="app")))
    pod = core.create_namespaced_pod(ns, client.V1Pod(metadata=client.V1ObjectMeta(name="p"), spec=client.V1PodSpec(service_account_name="app", node_name="node-a", containers=[client.V1Container(name="c", image="busybox")])))
    req = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=["istio-ca"], expiration_seconds=3600, bound_object_ref=client.V1BoundObjectReference(kind="Pod", api_version="v1", name="p", uid=pod.metadata.uid)))
    tr = core.create_namespaced_service_account_token("app", ns, req)
    token = tr.status.token
    out["token_parts"] = len(token.split("."))
    review = auth.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token, audiences=["istio-ca"])))
    out["authenticated"] = bool(review.status.authenticated)
    out["username"] = review.status.user.username if review.status.user else None
    out["extra"] = review.status.user.extra if review.status.user else None
    wrong = auth.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token, audiences=["other"])))
    out["wrong_audience"] = bool(wrong.status.authenticated)
    core.delete_namespaced_pod("p", ns, grace_period_seconds=0)  # the test is the kubelet: confirmed at once
    gone = auth.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token, audiences=["istio-ca"])))
    out["after_pod_deleted"] = bool(gone.status.authenticated)
    return out


def schemas(api_client, ns):
    core = client.CoreV1Api(api_client)
    custom = client.CustomObjectsApi(api_client)
    ext = client.ApiextensionsV1Api(api_client)
    out = {}
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))

    def policy(name, spec):
        return {"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy", "metadata": {"name": name}, "spec": spec}

    def refused(call):
        try:
            call()
            return {"status": 200}
        except ApiException as e:
            body = json.loads(e.body)
            return {"status": e.status, "reason": body.get("reason"), "message": body.get("message"), "causes": body.get("details", {}).get("causes")}

    args = ("security.istio.io", "v1", ns, "authorizationpolicies")
    out["invalid"] = refused(lambda: custom.create_namespaced_custom_object(*args, policy("bad", {"action": "DENYX"})))
    # This client's typed calls predate fieldValidation: the query parameter goes through its raw call.
    out["strict"] = refused(lambda: api_client.call_api(
        f"/apis/security.istio.io/v1/namespaces/{ns}/authorizationpolicies", "POST",
        query_params=[("fieldValidation", "Strict")], body=policy("strict", {"foo": 1}),
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        auth_settings=["BearerToken"], response_type="object", _return_http_data_only=True))
    custom.create_namespaced_custom_object(*args, policy("pruned", {"action": "DENY", "foo": 1}))
    out["pruned_spec"] = custom.get_namespaced_custom_object("security.istio.io", "v1", ns, "authorizationpolicies", "pruned")["spec"]
    out["patch"] = refused(lambda: custom.patch_namespaced_custom_object("security.istio.io", "v1", ns, "authorizationpolicies", "pruned", {"spec": {"rules": "x"}}))
    ext.create_custom_resource_definition({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "peerauthentications.security.istio.io"},
        "spec": {"group": "security.istio.io", "scope": "Namespaced", "names": {"plural": "peerauthentications", "kind": "PeerAuthentication"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})
    # The conditions are the server's controller's: watch for them, as kubectl wait does.
    crd = None
    w = watch.Watch()
    for ev in w.stream(ext.list_custom_resource_definition, field_selector="metadata.name=peerauthentications.security.istio.io", timeout_seconds=10):
        if ev["object"].status.conditions:
            crd = ev["object"]
            w.stop()
    out["established"] = [[c.type, c.status] for c in crd.status.conditions]
    out["accepted_kind"] = crd.status.accepted_names.kind
    return out


def main():
    kubeconfig, scenario, ns = sys.argv[1], sys.argv[2], sys.argv[3]
    api_client = config.new_client_from_config(config_file=kubeconfig)
    result = {"crud": crud_and_watch, "tokens": tokens, "schemas": schemas}[scenario](api_client, ns)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
