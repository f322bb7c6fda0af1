#!/usr/bin/env bash
# A small PKI for an argus test cluster, made with openssl: one CA, the
# collector's server certificate, one certificate per agent node and one per
# argusctl user. Not for production (keys unencrypted, one CA for everything);
# it shows what each certificate must carry:
#   collector  subjectAltName DNS:<name>, DNS:localhost, IP:127.0.0.1 (the
#              address agents dial must be among them)
#   agent      OU=agent, CN and DNS subjectAltName = the node name (node.name
#              of the agent; batches naming another node are refused)
#   query      OU=query (argusctl: may call the Query methods only)
#   admin      OU=query and OU=admin (argusctl: also argusctl actions undo
#              and reset, which change what the collector did)
#
# Usage: make-pki.sh DIR [--days N] [--collector NAME] [--agent NODE]... \
#                        [--query NAME]... [--admin NAME]... [--expired-agent NODE]...
# Writes DIR/ca.{crt,key}, DIR/collector.{crt,key}, DIR/agent-NODE.{crt,key},
# DIR/query-NAME.{crt,key}, DIR/admin-NAME.{crt,key}. An existing CA in DIR is reused, so running it
# again adds or renews leaf certificates under the same CA (rotation).
# --expired-agent makes a certificate that expired yesterday (for tests).
set -euo pipefail

die() { echo "make-pki.sh: $*" >&2; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || die "usage: make-pki.sh DIR [--days N] [--collector NAME] [--agent NODE]... [--query NAME]... [--admin NAME]... [--expired-agent NODE]..."
dir=$1; shift
days=365 collector="" agents=() queries=() admins=() expired=()
while [[ $# -gt 0 ]]; do
    [[ $# -ge 2 ]] || die "$1 needs a value"
    case $1 in
    --days) [[ $2 =~ ^[0-9]+$ && $2 -ge 1 ]] || die "--days: '$2' is not a number of days >= 1"; days=$2 ;;
    --collector) collector=$2 ;;
    --agent) agents+=("$2") ;;
    --query) queries+=("$2") ;;
    --admin) admins+=("$2") ;;
    --expired-agent) expired+=("$2") ;;
    *) die "unknown option '$1'" ;;
    esac
    shift 2
done
for n in "$collector" "${agents[@]}" "${queries[@]}" "${admins[@]}" "${expired[@]}"; do
    [[ -z $n || $n =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "'$n' is not a host name"
done
command -v openssl >/dev/null || die "openssl not found (apt-get install openssl)"
mkdir -p "$dir"
umask 077

newkey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

if [[ ! -f $dir/ca.crt || ! -f $dir/ca.key ]]; then
    newkey "$dir/ca.key"
    openssl req -x509 -new -key "$dir/ca.key" -out "$dir/ca.crt" -days $((days * 2)) \
        -subj "/O=argus/CN=argus test CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
fi

# leaf NAME SUBJECT SAN EKU DAYS: DIR/NAME.{key,crt} signed by the CA.
leaf() {
    local name=$1 subj=$2 san=$3 eku=$4 d=$5 ext
    ext=$(mktemp)
    printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=%s\nsubjectAltName=%s\n' \
        "$eku" "$san" >"$ext"
    newkey "$dir/$name.key"
    openssl req -new -key "$dir/$name.key" -subj "$subj" 2>/dev/null |
        openssl x509 -req -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
            -days "$d" -extfile "$ext" -out "$dir/$name.crt" 2>/dev/null
    rm -f "$ext"
    echo "$dir/$name.crt: $subj ($san)"
}

[[ -z $collector ]] ||
    leaf collector "/O=argus/OU=collector/CN=$collector" \
        "DNS:$collector,DNS:localhost,IP:127.0.0.1" serverAuth "$days"
for n in "${agents[@]}"; do leaf "agent-$n" "/O=argus/OU=agent/CN=$n" "DNS:$n" clientAuth "$days"; done
for n in "${queries[@]}"; do leaf "query-$n" "/O=argus/OU=query/CN=$n" "DNS:$n" clientAuth "$days"; done
for n in "${admins[@]}"; do leaf "admin-$n" "/O=argus/OU=query/OU=admin/CN=$n" "DNS:$n" clientAuth "$days"; done
for n in "${expired[@]}"; do leaf "agent-$n" "/O=argus/OU=agent/CN=$n" "DNS:$n" clientAuth -1; done
chmod 0644 "$dir"/*.crt
