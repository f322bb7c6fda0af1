#!/usr/bin/env bash
# The collector's report page, as people open it: a compute straggler run by
# the simulator against the real collector; `/` lists the jobs (a hostile
# job name comes back escaped), the job page carries the report with its
# evidence and a heatmap whose suspect row is the culprit's, marked with
# its label and the onset; the rank page lists the culprit's steps;
# argusctl heatmap draws the same picture. Then headless chromium renders
# the job page: the screenshot has the asked size and is not blank (many
# colours, red cells), and the DOM it built holds the suspect's label.
source "$(dirname "$0")/lib.sh"

start_collector "$T/store"
"$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job cs --scenario compute-straggler --ranks 64 \
    --steps 100 --rate 50 --steps_per_batch 2 --tp 8 --seed 11 >"$T/cs.json" ||
    fail "sim failed: $(cat "$T/cs.json")"
EVIL='evil<script>alert(1)</script>"&'"'"'x'
"$BIN/argus-sim" --collector "127.0.0.1:$CPORT" --job "$EVIL" --scenario healthy --ranks 16 \
    --steps 30 --rate 50 --steps_per_batch 2 --tp 2 --seed 3 >"$T/evil.json" ||
    fail "sim (hostile job name) failed: $(cat "$T/evil.json")"
culprit=$(tail -1 "$T/cs.json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["culprits"][0])')
onset=$(tail -1 "$T/cs.json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["onset"])')
pages_culprit() { "$BIN/argusctl" --collector "127.0.0.1:$CPORT" stragglers --job cs |
    grep -Eq "^  PAGES +rank $1 "; }
export -f pages_culprit
export BIN CPORT
wait_for "a report that pages rank $culprit" 60 bash -c "pages_culprit $culprit"

URL="http://127.0.0.1:$HPORT"
code=$(curl -s -o "$T/index.html" -w '%{http_code}' "$URL/") || fail "GET / failed"
[[ $code == 200 ]] || fail "GET / answered $code"
grep -q 'href="/job/cs"' "$T/index.html" || fail "/ does not link job cs: $(head -c 2000 "$T/index.html")"
grep -q 'evil&lt;script&gt;alert(1)&lt;/script&gt;&quot;&amp;&#39;x' "$T/index.html" ||
    fail "/ does not show the hostile job name escaped"
grep -q '<script' "$T/index.html" && fail "/ carries the hostile name unescaped"

curl -sf -o "$T/job.html" "$URL/job/cs" || fail "GET /job/cs failed"
grep -q ">rank $culprit COMPUTE</text>" "$T/job.html" ||
    fail "the heatmap does not label suspect rank $culprit"
grep -q "onset: step $onset<" "$T/job.html" || fail "the heatmap's onset is not step $onset"
grep -q 'class="report"' "$T/job.html" || fail "the job page lists no report"
grep -Eq "<td>CAUSE_COMPUTE</td>" "$T/job.html" || fail "the report's evidence is missing"
# the culprit's row is red from the onset, its TP peers' rows are not
/usr/bin/python3 - "$T/job.html" "$culprit" <<'PY' || fail "the heatmap does not single out the culprit"
import re, sys
html, culprit = open(sys.argv[1]).read(), int(sys.argv[2])
worst = {}
for first, last, ratio in re.findall(r"<title>ranks? (\d+)(?:-(\d+))?[^<]* steps \d+-\d+: ([0-9.]+)x</title>", html):
    worst[int(first)] = max(worst.get(int(first), 0), float(ratio))
assert worst.get(culprit, 0) > 1.3, worst.get(culprit)
peers = [r for r in range(culprit - culprit % 8, culprit - culprit % 8 + 8) if r != culprit]
assert all(worst.get(r, 1) < 1.15 for r in peers), {r: worst.get(r) for r in peers}
print("culprit %.2fx, its peers at most %.2fx" % (worst[culprit], max(worst.get(r, 1) for r in peers)))
PY

enc=$(/usr/bin/python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$EVIL")
curl -sf -o "$T/evil.html" "$URL/job/$enc" || fail "GET the hostile job's page failed"
grep -q '<h1>Job evil&lt;script&gt;' "$T/evil.html" || fail "hostile job page: name not escaped"
grep -q '<script' "$T/evil.html" && fail "hostile job page carries the name unescaped"

curl -sf -o "$T/rank.html" "$URL/rank/$culprit/cs" || fail "GET the culprit's rank page failed"
[[ $(grep -c '^<tr><td class="num">' "$T/rank.html") -ge 50 ]] || fail "rank page lists too few steps"
grep -q "<svg class=\"chart\"" "$T/rank.html" || fail "rank page has no chart"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/job/no-such-job")
[[ $code == 404 ]] || fail "an unknown job answered $code, not 404"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/rank/x/cs")
[[ $code == 404 ]] || fail "a bad rank path answered $code, not 404"

ctl heatmap --job cs -o "$T/cs.svg" >/dev/null || fail "argusctl heatmap failed"
grep -q ">rank $culprit COMPUTE</text>" "$T/cs.svg" || fail "argusctl's SVG does not label rank $culprit"

CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
    skip "chromium is not installed (apt-get install chromium): no browser check"
chrome() { timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$T/chrome" --window-size=1400,1000 "$@" 2>>"$T/chromium.log"; }
chrome --screenshot="$T/page.png" "$URL/job/cs" >/dev/null || fail "chromium screenshot failed: $(tail -5 "$T/chromium.log")"
chrome --dump-dom "$URL/job/cs" >"$T/dom.html" || fail "chromium --dump-dom failed"
grep -q ">rank $culprit COMPUTE</text>" "$T/dom.html" || fail "the DOM lacks the suspect's label"
/usr/bin/python3 - "$T/page.png" <<'PY' || fail "the screenshot is blank or the wrong size"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, hdr = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        hdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype = hdr[:4]
assert (w, h) == (1400, 1000), "size %dx%d" % (w, h)
assert depth == 8 and ctype in (2, 6), "PNG type %d/%d" % (depth, ctype)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, rows = bytearray(stride), []
for y in range(h):  # undo the PNG filters
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line)); prev = line
colours, nonwhite, red = set(), 0, 0
for line in rows:
    for x in range(0, stride, bpp):
        r, g, b = line[x], line[x + 1], line[x + 2]
        colours.add((r, g, b))
        nonwhite += (r, g, b) != (255, 255, 255)
        red += r > 150 and g < 130 and b < 130
print("%dx%d, %d colours, %d non-white, %d red pixels" % (w, h, len(colours), nonwhite, red))
assert len(colours) > 20 and nonwhite > 20000 and red > 200
PY
echo "web report page ok"
