#!/bin/sh
# Writes deploy/kubernetes/monitoring/prometheusrule.yaml from
# deploy/prometheus/gms-edge-alerts.yml: the same groups in a
# PrometheusRule (t/82-alerts.t checks the two agree).
set -eu
top=$(dirname "$0")/..
src=$top/deploy/prometheus/gms-edge-alerts.yml
out=$top/deploy/kubernetes/monitoring/prometheusrule.yaml
{
    cat <<'HEAD'
# deploy/prometheus/gms-edge-alerts.yml as a PrometheusRule (the
# Prometheus Operator's resource; kube-prometheus-stack selects rules by
# its ruleSelector: add the label your Prometheus selects on).  The same
# groups, rule for rule (t/82-alerts.t checks they agree); made from that
# file by `tools/prometheusrule.sh`.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: gms-edge
  labels:
    app.kubernetes.io/name: gms-edge
    app.kubernetes.io/component: alerts
spec:
HEAD
    sed -n '/^groups:/,$p' "$src" | sed 's/^\(.\)/  \1/'
} > "$out"
