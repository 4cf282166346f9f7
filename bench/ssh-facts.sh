#!/bin/bash
# bench/ssh-facts.sh [N]: gpufleet host against N fake GPU hosts behind real
# OpenSSH sshd instances (tests/lab/sshlab.py, 127.33.10.0/24 and up) vs, in
# the same run, `xargs -P 64 ssh` running the same commands on the same hosts
# (one ssh per host, the commands joined in one remote shell, each followed
# by its exit status, as a script would do it). Prints the SSH sessions one
# gpufleet run cost each host (sshd's, from the lab's logs), medians and the
# ratio gpufleet / ssh. Needs sshd, ssh, hyperfine and a built tree.
set -euo pipefail

n=${1:-200}
runs=${RUNS:-5}
fan=${FANOUT:-64}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
gf=${GPUFLEET_BIN:-$top/build/cli/gpufleet}
[ -x "$gf" ] || { echo "build first: ninja -C build" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "hyperfine is not installed" >&2; exit 2; }

work=$(mktemp -d /tmp/gf-bench-ssh.XXXXXX)
chmod 755 "$work"  # the lab's login user runs the fake hosts' scripts under it
cleanup() {
	/usr/bin/python3 tests/lab/sshlab.py stop --dir "$work/lab" || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

/usr/bin/python3 tests/lab/sshlab.py start --dir "$work/lab" --prefix 127.33.10 --count "$n"
eval "$(/usr/bin/python3 -c "
import json, shlex
s = json.load(open('$work/lab/lab.json'))
print('user=%s key=%s known=%s port=%d' % (shlex.quote(s['user']), shlex.quote(s['key']),
      shlex.quote(s['known_hosts']), s['port']))
with open('$work/nodes.csv', 'w') as f:
    f.write('name,ssh,groups\n')
    for node in s['nodes']:
        f.write('%s,%s,bench\n' % (node['name'], node['ssh']))
with open('$work/addrs', 'w') as f:
    f.write('\n'.join(node['ssh'].rsplit(':', 1)[0] for node in s['nodes']) + '\n')
")"

export GPUFLEET_DB=$work/db GPUFLEET_CREDENTIALS=$work/cred
umask 077
printf '[default]\nssh_user = %s\nssh_key = %s\nssh_known_hosts = %s\n' "$user" "$key" "$known" > "$work/cred"
"$gf" nodes import "$work/nodes.csv" >/dev/null

# The same first-round commands gpufleet runs, in one remote shell, each with its exit status.
script=$("$gf" host --commands | head -n 10 | sed 's/$/; echo "@@ $?";/' | paste -sd' ')
printf '%s\n' "$script" > "$work/script"
cat > "$work/ssh-one" <<EOF
#!/bin/sh
exec ssh -q -o BatchMode=yes -o IdentitiesOnly=yes -i '$key' -o UserKnownHostsFile='$known' \
	-o StrictHostKeyChecking=yes -o ControlMaster=no -p $port '$user'@"\$1" "\$(cat '$work/script')"
EOF
chmod +x "$work/ssh-one"

# Sanity: both see every host, and every command answered; and how many SSH sessions
# gpufleet's run cost each host (what sshd ran, from the lab's per-host command logs).
/usr/bin/python3 - "$work/lab" <<'PY'
import glob, os, sys
for f in glob.glob(os.path.join(sys.argv[1], 'hosts', '*', 'commands.log')):
    open(f, 'w').close()
PY
ok=$("$gf" host @bench --format ndjson --no-progress --timeout 60 | grep -c '"state":"ok"' || true)
/usr/bin/python3 - "$work/lab" <<'PY'
import glob, os, sys
n = [open(f, encoding='utf-8', errors='replace').read().count('\n\x1e\n')
     for f in glob.glob(os.path.join(sys.argv[1], 'hosts', '*', 'commands.log'))]
print('gpufleet: SSH sessions per host in one run: min %d, max %d, over %d hosts' % (min(n), max(n), len(n)))
PY
ref=$(xargs -P "$fan" -n 1 "$work/ssh-one" < "$work/addrs" 2>/dev/null | grep -c '^@@ ' || true)
echo "sanity: gpufleet $ok/$n hosts ok; ssh: $ref of $((n * 10)) commands ran"
[ "$ok" -eq "$n" ] && [ "$ref" -eq $((n * 10)) ] || { echo "sanity check failed" >&2; exit 1; }

hyperfine --style basic --runs "$runs" --warmup 1 --export-json "$work/h.json" \
	--command-name "gpufleet host (fanout $fan)" \
	"$gf host @bench --fanout $fan --timeout 60 --no-progress -q -C" \
	--command-name "xargs -P $fan ssh" \
	"xargs -P $fan -n 1 $work/ssh-one < $work/addrs > /dev/null 2>&1"

/usr/bin/python3 - "$work/h.json" "$n" <<'PY'
import json, statistics, sys
res = json.load(open(sys.argv[1]))["results"]
med = {r["command"]: statistics.median(r["times"]) for r in res}
user = {r["command"]: r["user"] + r["system"] for r in res}
names = list(med)
print(f"\nN={sys.argv[2]}")
print("| command | median | client CPU (user+sys, mean) |")
print("|---|---|---|")
for k in names:
    print(f"| {k} | {med[k]:.3f} s | {user[k]:.2f} s |")
print(f"ratio gpufleet / ssh: {med[names[0]] / med[names[1]]:.2f}")
PY
