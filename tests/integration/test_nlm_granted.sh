#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# An upstream's GRANTED callback of a blocked lock relayed to the waiting
# client's lock manager. Runs under `harness.sh --ganesha-nlm` with
# nlm_granted_proxy.conf (the proxy listens on every address and holds
# NLM in the host's rpcbind, where Ganesha's callback looks for it) and
# nlm_granted_export.conf (the namespace's addresses are clients):
#
#   test_nlm_granted.sh TEST_NLM_GRANTED FAKE_LOCKD [upreboot|nores]
#
# The client host is a network namespace, not the kernel guest of
# tests/kernel: the guest sits behind QEMU's user networking, so the host
# cannot call the guest's lockd, which the relay must. The namespace has
# a veth pair to this host (10.213.N.1 here, 10.213.N.2 there, N from
# this shell's pid, the first not in use), a mount namespace with a
# private /run so it runs its own rpcbind (rpcbind -f: its socket and
# lock files in that /run), and
# fake_lockd, registered there as NLM v4 and NSM v1 (the client's statd),
# recording each GRANTED and each SM_NOTIFY it gets.
# The waiter's LOCK is sent from the namespace (fake_lockd lock, through
# `ip netns exec`) so the proxy sees the namespace's address.
#
# 1. test_nlm_granted granted relayed: fake_lockd answers GRANTED;
# 2. test_nlm_granted granted refused: it answers DENIED;
# 3. test_nlm_granted granted sync: a synchronous GRANTED sent to the
#    proxy from this host (Ganesha sends GRANTED_MSG), and one naming an
#    owner the proxy did not wrap;
# 4. test_nlm_granted msg test, lock, test_denied, unlock, cancel: the
#    client's TEST_MSG .. UNLOCK_MSG, sent from the namespace, answered by
#    _RES calls that fake_lockd records;
# 5. fake_lockd killed; test_nlm_granted granted unreachable, then msg
#    unreachable (a LOCK_RES nobody takes: the lock is released).
#
# With "upreboot" (integration.nlm_upreboot), only test_nlm_granted
# upreboot notify: the upstream restarts (NFSC_UPSTREAMCTL) and its
# reboot is passed on to the namespace's statd. With "nores"
# (integration.nlm_nores), only test_nlm_granted msg lock_nores, with a
# fake_lockd that answers no _RES call.
set -euo pipefail

prog=${1:?usage: $0 TEST_NLM_GRANTED FAKE_LOCKD}
fake=${2:?usage: $0 TEST_NLM_GRANTED FAKE_LOCKD}
mode=${3:-granted}
: "${NFSC_DIRECT_NLM_PORT:?run under harness.sh --ganesha-nlm}"
: "${NFSC_TMP:?run under harness.sh}"

# A subnet no interface of this host has yet (another run's, say).
for ((k = 0; k < 200; k++)); do
	sub=$((($$ + k) % 200 + 20))
	ip -4 -o addr show | grep -q " 10\.213\.$sub\." || break
done
ns=nfsc-granted-$$
hif=ngr$$h
pif=ngr$$p
GRANTED_HOST_IP=10.213.$sub.1
GRANTED_PEER_IP=10.213.$sub.2
work=$NFSC_TMP/granted
mkdir -p "$work"
GRANTED_RECORD=$work/record
GRANTED_MODE=$work/mode
ready=$work/ready
lockd_pid=

cleanup() {
	local p
	if [[ -n "$lockd_pid" ]]; then
		kill "$lockd_pid" 2>/dev/null || true
		wait "$lockd_pid" 2>/dev/null || true
	fi
	if [[ -s "$work/rpcbind.pid" ]]; then
		p=$(cat "$work/rpcbind.pid")
		kill "$p" 2>/dev/null || true
	fi
	ip link del "$hif" 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT

ip netns add "$ns"
ip link add "$hif" type veth peer name "$pif"
ip link set "$pif" netns "$ns"
ip addr add "$GRANTED_HOST_IP/24" dev "$hif"
ip link set "$hif" up
ip -n "$ns" addr add "$GRANTED_PEER_IP/24" dev "$pif"
ip -n "$ns" link set "$pif" up
ip -n "$ns" link set lo up

# The namespace's rpcbind and lock manager, in a mount namespace whose
# /run is a tmpfs of its own: rpcbind's socket and lock file, and the
# socket fake_lockd registers through, are not the host's. The shell
# execs fake_lockd, so $! is fake_lockd's pid.
: >"$GRANTED_MODE"
# nores: the fake lock manager answers no _RES call (a message).
if [[ "$mode" == nores ]]; then export FAKE_LOCKD_NO_RES_REPLY=1; fi
# shellcheck disable=SC2016 # expanded by the inner sh
ip netns exec "$ns" unshare -m --propagation private sh -ec '
	mount -t tmpfs tmpfs /run
	mkdir -p /run/rpcbind
	rpcbind -f &
	echo $! >"$1/rpcbind.pid"
	i=0
	until rpcinfo -p 127.0.0.1 >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -lt 600 ] || { echo "namespace rpcbind does not answer" >&2; exit 1; }
		sleep 0.1
	done
	exec "$2" serve "$3" "$4" "$5"
' sh "$work" "$fake" "$GRANTED_RECORD" "$GRANTED_MODE" "$ready" &
lockd_pid=$!
for ((i = 0; i < 600; i++)); do
	[[ -e "$ready" ]] && break
	kill -0 "$lockd_pid" 2>/dev/null || { echo "fake_lockd exited" >&2; exit 1; }
	sleep 0.1
done
[[ -e "$ready" ]] || { echo "fake_lockd did not register within 60 s" >&2; exit 1; }
# Registered in the namespace's rpcbind, and not in the host's.
ip netns exec "$ns" rpcinfo -p "$GRANTED_PEER_IP" | grep -q '100021 *4 *tcp' ||
	{ echo "NLM v4 is not registered in the namespace's rpcbind" >&2; exit 1; }
echo "ok: fake_lockd registered NLM v4 at $GRANTED_PEER_IP's rpcbind"

export GRANTED_NS=$ns GRANTED_FAKE=$fake GRANTED_HOST_IP GRANTED_PEER_IP \
	GRANTED_RECORD GRANTED_MODE
if [[ "$mode" == nores ]]; then
	"$prog" msg lock_nores
	echo "test_nlm_granted nores: passed"
	exit 0
fi
if [[ "$mode" == upreboot ]]; then
	"$prog" upreboot notify
	echo "test_nlm_granted upreboot: passed"
	exit 0
fi
"$prog" granted relayed
"$prog" granted refused
"$prog" granted sync
for t in test lock test_denied unlock cancel; do
	"$prog" msg "$t"
done
"$prog" granted polled
kill "$lockd_pid"
wait "$lockd_pid" 2>/dev/null || true
lockd_pid=
"$prog" granted unreachable
"$prog" msg unreachable
echo "test_nlm_granted: passed"
