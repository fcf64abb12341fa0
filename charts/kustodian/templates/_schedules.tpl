{{/*
Reclaim-space schedules in chart values, judged at render time exactly as the webhook judges the
central ConfigMap the chart renders them into (kustodian/policy/reclaim/config.py): the same
accept/reject and the same message, so `helm template`/`lint`/`install` refuse what the webhook
would refuse (without it the ConfigMap is stored before any Kustodian pod runs, and the webhook
then ignores the whole config). The webhook's rule for its own ConfigMap is
`schedule.strict_schedule_error`: Kustodian's reading (`schedule._parse`, the messages and the
did-you-means) where it objects, else robfig/cron v3's ParseStandard (what csi-addons runs,
`robfig.py`) where only robfig refuses. Both are written here in Helm's template language, line
for line after the Python (names in the comments); tests/chart/test_chart_schedules.py proves the
equality over the robfig oracle's corpus and generated strings.

What Helm's template language does not have is emulated: Python's and Go's whitespace sets (regex
classes), Python's str.lower (Go's lower maps U+0130 to "i", Python to "i" + U+0307),
json.dumps(ensure_ascii=False) (Go's JSON escapes U+2028/U+2029), and ZoneInfo (sprig's
dateInZone falls back to UTC on an unknown zone: a zone that formats as UTC and is no UTC alias is
unknown; a helm with no time-zone database at all leaves zones to the webhook).

Helpers return their result as text (include): a reason, or "" when the value is accepted.
*/}}

{{/* The characters of Python's str.isspace() (str.split(), strip()) and of Go's unicode.IsSpace()
(strings.Fields, TrimSpace), for a regex class: Go's lack U+001C..U+001F. */}}
{{- define "kustodian.sched.pyspace" -}}\t\n\v\f\r\x{1c}-\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}{{- end -}}
{{- define "kustodian.sched.gospace" -}}\t\n\v\f\r\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}{{- end -}}

{{/* str.strip() / strings.TrimSpace: (list "py"|"go" TEXT) */}}
{{- define "kustodian.sched.strip" -}}
{{- $ws := include (printf "kustodian.sched.%sspace" (index . 0)) . -}}
{{- regexReplaceAll (printf `^[%s]+|[%s]+$` $ws $ws) (index . 1) "" -}}
{{- end -}}

{{/* json.dumps(text, ensure_ascii=False) */}}
{{- define "kustodian.sched.quote" -}}
{{- $seps := regexFindAll `[\x{8}\x{c}\x{2028}\x{2029}]` . -1 -}}
{{- $out := list -}}
{{- range $i, $part := regexSplit `[\x{8}\x{c}\x{2028}\x{2029}]` . -1 -}}
{{- $out = append $out (toRawJson $part | trimPrefix "\"" | trimSuffix "\"") -}}
{{- if lt $i (len $seps) -}}
{{- $c := index $seps $i -}}
{{- $out = append $out (ternary "\\b" (ternary "\\f" $c (eq $c "\f")) (eq $c "\b")) -}}
{{- end -}}
{{- end -}}
"{{ join "" $out }}"
{{- end -}}

{{/* Python's str.lower() where it can matter (a result compared with ASCII words). */}}
{{- define "kustodian.sched.lower" -}}
{{- . | replace "\u0130" "i\u0307" | lower -}}
{{- end -}}

{{/*
The zone loads: (list "py" ZONE) as Python's ZoneInfo(zone) (Kustodian's reading), which refuses a
key that is not normalized; (list "go" ZONE) as Go's time.LoadLocation (robfig's), which opens
<zoneinfo>/ZONE as a path: "Europe//Paris" and "./UTC" load, "Europe/Paris/" (a directory) does
not. "true" or "".
*/}}
{{- define "kustodian.sched.zoneKnown" -}}
{{- $z := index . 1 -}}
{{- $parts := splitList "/" $z -}}
{{- $key := without $parts "" "." | join "/" -}}
{{- if and (eq (index . 0) "py") (or (hasPrefix "/" $z) (regexMatch `(^|/)\.\.?(/|$)|//|/$|\x00` $z)) -}}
{{- /* ZoneInfo refuses absolute and non-normalized keys (_validate_tzfile_path) */ -}}
{{- else if has (last $parts) (list "" ".") -}}
{{- else if regexMatch `^((posix|right)/)?(Etc/)?(UTC|UCT|Universal|Zulu)$` $key -}}true{{/* UTC itself */}}
{{- else if eq (dateInZone "MST" 0 "Europe/Paris") "UTC" -}}true{{/* no time-zone database here: the webhook checks */}}
{{- else if ne (dateInZone "MST" 0 $z) "UTC" -}}true
{{- end -}}
{{- end -}}

{{/*
Go's time.ParseDuration, as kustodian/policy/reclaim/duration.py: (dict "text" S "out" D) sets
D.reason, or D.ns (int64; D.min when it is exactly -2^63, which int64 holds only negated).
The fraction is exact to 17 digits past the unit's own (nanoseconds of an hour: 11).
*/}}
{{- define "kustodian.sched.duration" -}}
{{- $out := .out -}}
{{- $text := .text -}}
{{- $max := 9223372036854775807 -}}
{{- $s := $text -}}
{{- $neg := false -}}
{{- if or (hasPrefix "-" $s) (hasPrefix "+" $s) -}}
{{- $neg = hasPrefix "-" $s -}}
{{- $s = substr 1 -1 $s -}}
{{- end -}}
{{- $_ := set $out "ns" 0 -}}
{{- $_ := set $out "neg" $neg -}}
{{- if eq $s "0" -}}
{{- else if not $s -}}
{{- $_ := set $out "reason" (ternary "empty" "a sign must be followed by a number" (not $text)) -}}
{{- else -}}
{{- /* unit: (m, e, scale = m * 10^e) */ -}}
{{- $units := dict "ns" (list 1 0 1) "us" (list 1 3 1000) "\u00b5s" (list 1 3 1000) "\u03bcs" (list 1 3 1000) "ms" (list 1 6 1000000) "s" (list 1 9 1000000000) "m" (list 6 10 60000000000) "h" (list 36 11 3600000000000) -}}
{{- $total := 0 -}}
{{- $atMin := false -}}
{{- $reason := "" -}}
{{- range until (len $s) -}}
{{- if and $s (not $reason) -}}
{{- if not (regexMatch `^[0-9.]` $s) -}}
{{- $reason = printf "expected a number at %s" (include "kustodian.sched.quote" $s) -}}
{{- else -}}
{{- $whole := regexFind `^[0-9]*` $s -}}
{{- $s = substr (len $whole) -1 $s -}}
{{- $frac := "" -}}
{{- if hasPrefix "." $s -}}
{{- $dot := regexFind `^\.[0-9]*` $s -}}
{{- $frac = substr 1 -1 $dot -}}
{{- $s = substr (len $dot) -1 $s -}}
{{- end -}}
{{- $unit := regexFind `^[^0-9.]*` $s -}}
{{- $s = substr (len $unit) -1 $s -}}
{{- if and (not $whole) (not $frac) -}}
{{- $reason = "a '.' must be next to a digit" -}}
{{- else if not $unit -}}
{{- $reason = "missing unit (one of ns, us, ms, s, m, h)" -}}
{{- else if not (hasKey $units $unit) -}}
{{- $reason = printf "unknown unit %s (valid units: ns, us, ms, s, m, h)" (include "kustodian.sched.quote" $unit) -}}
{{- else -}}
{{- $u := get $units $unit -}}
{{- $m := index $u 0 -}}{{- $e := index $u 1 -}}{{- $scale := index $u 2 -}}
{{- /* the value: whole*scale + floor(0.frac*scale); "" when above 2^63, "min" at 2^63 exactly */ -}}
{{- $w := regexReplaceAll `^0+` $whole "" -}}
{{- $value := "" -}}
{{- if or (gt (len $w) 19) (and (eq (len $w) 19) (gt $w "9223372036854775808")) -}}
{{- else if eq $w "9223372036854775808" -}}
{{- if eq $scale 1 -}}{{- $value = "min" -}}{{- end -}}
{{- else -}}
{{- $wi := atoi ($w | default "0") | int64 -}}
{{- if le $wi (div $max $scale) -}}
{{- $head := printf "%s%s" (trunc (int $e) $frac) (repeat (int $e) "0") | trunc (int $e) -}}
{{- $fp := mul $m (atoi ($head | default "0") | int64) -}}
{{- if and (gt $m 1) (gt (len $frac) (int $e)) -}}
{{- $g := printf "%s%s" (substr (int $e) -1 $frac | trunc 17) (repeat 17 "0") | trunc 17 -}}
{{- $fp = add $fp (div (mul $m (atoi $g | int64)) 100000000000000000) -}}
{{- end -}}
{{- $ws := mul $wi $scale -}}
{{- if le $fp (sub $max $ws) -}}{{- $value = add $ws $fp -}}
{{- else if eq (sub $fp 1) (sub $max $ws) -}}{{- $value = "min" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* total += value, at most 2^63-1 (2^63 when negative) */ -}}
{{- if eq (toString $value) "" -}}
{{- $reason = "out of range (Go durations are limited to about 292 years)" -}}
{{- else if $atMin -}}
{{- if or (eq (toString $value) "min") (gt (int64 $value) 0) -}}{{- $reason = "out of range (Go durations are limited to about 292 years)" -}}{{- end -}}
{{- else if eq (toString $value) "min" -}}
{{- if and $neg (eq $total 0) -}}{{- $atMin = true -}}{{- else -}}{{- $reason = "out of range (Go durations are limited to about 292 years)" -}}{{- end -}}
{{- else if gt (int64 $value) (sub $max $total) -}}
{{- if and $neg (eq (sub (int64 $value) 1) (sub $max $total)) -}}{{- $atMin = true -}}
{{- else -}}{{- $reason = "out of range (Go durations are limited to about 292 years)" -}}{{- end -}}
{{- else -}}
{{- $total = add $total $value -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $reason -}}
{{- $_ := set $out "reason" $reason -}}
{{- else -}}
{{- $_ := set $out "ns" $total -}}
{{- $_ := set $out "min" $atMin -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A value of a cron field (schedule._value): (dict "text" T "b" BOUNDS "out" D) sets D.v or D.reason. */}}
{{- define "kustodian.sched.value" -}}
{{- $t := .text -}}{{- $b := .b -}}{{- $out := .out -}}
{{- $named := get $b.names (include "kustodian.sched.lower" $t) -}}
{{- if not $t -}}
{{- $_ := set $out "reason" "a range needs a value on both sides of '-'" -}}
{{- else if ne (toString $named) "" -}}
{{- $_ := set $out "v" (int $named) -}}
{{- else if not (regexMatch `^[0-9]+$` $t) -}}
{{- $expected := printf "a number from %d to %d" (int $b.low) (int $b.high) -}}
{{- if $b.names }}{{ $expected = printf "%s or a name such as %s" $expected $b.first }}{{ end -}}
{{- $reason := printf "%s is not %s" (include "kustodian.sched.quote" $t) $expected -}}
{{- /* the characters whose str.upper() holds L, W, # or H */ -}}
{{- if regexMatch `[LWHlwh#\x{1e96}\x{1e98}\x{fb02}\x{fb04}]` $t -}}
{{- $reason = printf "%s (robfig/cron's standard parser has no L, W, # or H)" $reason -}}
{{- end -}}
{{- $_ := set $out "reason" $reason -}}
{{- else -}}
{{- $digits := regexReplaceAll `^0+` $t "" | default "0" -}}
{{- if gt (len $digits) 4 -}}
{{- $_ := set $out "reason" (printf "%s is above the maximum %d" $digits (int $b.high)) -}}
{{- else -}}
{{- $v := atoi $digits -}}
{{- if lt $v (int $b.low) -}}
{{- $_ := set $out "reason" (printf "%d is below the minimum %d" $v (int $b.low)) -}}
{{- else if gt $v (int $b.high) -}}
{{- $_ := set $out "reason" (printf "%d is above the maximum %d%s" $v (int $b.high) (ternary " (Sunday is 0: robfig/cron does not accept 7)" "" (and (eq $b.name "day-of-week") (eq $v 7)))) -}}
{{- else -}}
{{- $_ := set $out "v" $v -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
One cron field (schedule._parse_field/_parse_term): (dict "raw" F "b" BOUNDS "out" D) sets
D.reason, or D.star (robfig's star bit), D.min (its smallest value) and D.set (value -> true,
months only).
*/}}
{{- define "kustodian.sched.field" -}}
{{- $b := .b -}}{{- $out := .out -}}
{{- $reason := "" -}}{{- $star := false -}}{{- $min := 100 -}}{{- $set := dict -}}
{{- range $term := splitList "," .raw -}}
{{- if not $reason -}}
{{- $base := $term -}}{{- $stepText := "" -}}
{{- $slash := contains "/" $term -}}
{{- if $slash -}}{{- $parts := splitn "/" 2 $term -}}{{- $base = $parts._0 -}}{{- $stepText = $parts._1 -}}{{- end -}}
{{- $start := 0 -}}{{- $end := 0 -}}{{- $termStar := false -}}{{- $step := 1 -}}
{{- if not $term -}}
{{- $reason = "empty item in the list" -}}
{{- else if contains "/" $stepText -}}
{{- $reason = printf "too many '/' in %s" (include "kustodian.sched.quote" $term) -}}
{{- else if or (eq $base "*") (eq $base "?") -}}
{{- if and (eq $base "?") (not $b.qm) -}}
{{- $reason = "'?' is only allowed in the day-of-month and day-of-week fields" -}}
{{- end -}}
{{- $start = int $b.low -}}{{- $end = int $b.high -}}{{- $termStar = true -}}
{{- else -}}
{{- $dash := contains "-" $base -}}
{{- $lh := splitn "-" 2 $base -}}
{{- $v := dict -}}
{{- $_ := include "kustodian.sched.value" (dict "text" $lh._0 "b" $b "out" $v) -}}
{{- if $v.reason -}}{{- $reason = $v.reason -}}
{{- else -}}
{{- $start = $v.v -}}{{- $end = $v.v -}}
{{- if $dash -}}
{{- $hv := dict -}}
{{- $_ := include "kustodian.sched.value" (dict "text" $lh._1 "b" $b "out" $hv) -}}
{{- if $hv.reason }}{{ $reason = $hv.reason }}{{ else }}{{ $end = $hv.v }}{{ end -}}
{{- else if $slash -}}
{{- $end = int $b.high -}}{{/* robfig: "N/step" means "N-max/step" */}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (not $reason) $slash -}}
{{- if or (not (regexMatch `^[0-9]+$` $stepText)) (regexMatch `^0+$` $stepText) -}}
{{- $reason = printf "the step in %s must be a positive number" (include "kustodian.sched.quote" $term) -}}
{{- else -}}
{{- $digits := regexReplaceAll `^0+` $stepText "" -}}
{{- $step = ternary 100 (atoi $digits) (gt (len $digits) 2) -}}
{{- if gt $step 1 }}{{ $termStar = false }}{{ end -}}
{{- end -}}
{{- end -}}
{{- if and (not $reason) (gt $start $end) -}}
{{- $reason = printf "the range %s starts after it ends" (include "kustodian.sched.quote" $base) -}}
{{- end -}}
{{- if not $reason -}}
{{- $star = or $star $termStar -}}
{{- if lt $start $min }}{{ $min = $start }}{{ end -}}
{{- range $m := untilStep $start (add $end 1 | int) $step -}}{{- $_ := set $set (toString $m) true -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $reason -}}
{{- $_ := set $out "reason" $reason -}}
{{- else -}}
{{- $_ := set $out "star" $star -}}{{- $_ := set $out "min" $min -}}{{- $_ := set $out "set" $set -}}
{{- end -}}
{{- end -}}

{{/* A descriptor (schedule._parse_descriptor): the reason it is refused, or nothing. */}}
{{- define "kustodian.sched.descriptor" -}}
{{- $spec := . -}}
{{- $known := list "@yearly" "@annually" "@monthly" "@weekly" "@daily" "@midnight" "@hourly" -}}
{{- if has $spec $known -}}
{{- else if hasPrefix "@every " $spec -}}
{{- $raw := trimPrefix "@every " $spec -}}
{{- $d := dict -}}
{{- $_ := include "kustodian.sched.duration" (dict "text" $raw "out" $d) -}}
{{- if $d.reason -}}
@every needs a Go duration such as 1h30m or 90s: {{ $d.reason }}
{{- else if or $d.min $d.neg (eq (int64 $d.ns) 0) -}}
the @every interval must be positive, got {{ include "kustodian.sched.quote" $raw }}
{{- else if lt (int64 $d.ns) 1000000000 -}}
the @every interval must be at least 1s (robfig/cron would round {{ $raw }} up to 1s)
{{- else if ne (mod (int64 $d.ns) 1000000000) 0 -}}
the @every interval must be a whole number of seconds (robfig/cron would truncate {{ $raw }})
{{- end -}}
{{- else -}}
{{- $stripped := include "kustodian.sched.strip" (list "py" $spec) -}}
{{- $lowered := include "kustodian.sched.lower" $spec -}}
{{- if and (ne $stripped $spec) (or (has $stripped $known) (hasPrefix "@every " $stripped)) -}}
remove the surrounding whitespace: robfig/cron matches descriptors exactly
{{- else if has $lowered $known -}}
descriptors are lowercase: did you mean {{ include "kustodian.sched.quote" $lowered }}?
{{- else if hasPrefix "@every" $lowered -}}
{{- $rest := include "kustodian.sched.strip" (list "py" (substr 6 -1 $spec)) -}}
{{- if not $rest -}}
@every needs a Go duration, e.g. @every 6h
{{- else -}}
write @every, one space, then a Go duration: did you mean {{ include "kustodian.sched.quote" (printf "@every %s" $rest) }}?
{{- end -}}
{{- else -}}
{{- $first := regexFind (printf `[^%s]+` (include "kustodian.sched.pyspace" .)) $spec -}}
unknown descriptor {{ include "kustodian.sched.quote" $first }} (known: {{ join ", " $known }}, @every <duration>)
{{- end -}}
{{- end -}}
{{- end -}}

{{/* What a person may have meant by a schedule of the wrong field count (schedule._hint), or nothing. */}}
{{- define "kustodian.sched.hint" -}}
{{- $words := regexFindAll (printf `[^%s]+` (include "kustodian.sched.pyspace" .)) (include "kustodian.sched.lower" .) -1 | join " " -}}
{{- $hints := dict "daily" "@daily" "day" "@daily" "everyday" "@daily" "every day" "@daily" "nightly" "@daily" "midnight" "@midnight" "weekly" "@weekly" "week" "@weekly" "every week" "@weekly" "hourly" "@hourly" "hour" "@hourly" "every hour" "@hourly" "monthly" "@monthly" "month" "@monthly" "every month" "@monthly" "yearly" "@yearly" "annually" "@annually" "every year" "@yearly" -}}
{{- if hasKey $hints $words -}}
{{- get $hints $words -}}
{{- else if regexMatch `^every [^ ]+$` $words -}}
{{- $token := trimPrefix "every " $words -}}
{{- $d := dict -}}
{{- $_ := include "kustodian.sched.duration" (dict "text" $token "out" $d) -}}
{{- if and (not $d.reason) (not $d.neg) (gt (int64 $d.ns) 0) -}}@every {{ $token }}{{- end -}}
{{- end -}}
{{- end -}}

{{/* Kustodian's reading of a schedule (schedule._parse): the reason it is refused, or nothing. */}}
{{- define "kustodian.sched.parse" -}}
{{- $text := . -}}
{{- $py := include "kustodian.sched.pyspace" . -}}
{{- $reason := "" -}}
{{- $spec := $text -}}
{{- if not (include "kustodian.sched.strip" (list "py" $text)) -}}
{{- $reason = ternary "empty" "only whitespace" (not $text) -}}
{{- else if gt (len (splitList "" $text)) 1024 -}}
{{- $reason = "longer than 1024 characters" -}}
{{- else if or (hasPrefix "TZ=" $spec) (hasPrefix "CRON_TZ=" $spec) -}}
{{- if not (contains " " $spec) -}}
{{- $reason = "a CRON_TZ=/TZ= prefix must be followed by a space and a schedule" -}}
{{- else -}}
{{- $parts := splitn " " 2 $spec -}}
{{- $zone := (splitn "=" 2 $parts._0)._1 -}}
{{- if not $zone -}}
{{- $reason = "the time zone after CRON_TZ=/TZ= is empty" -}}
{{- else if eq $zone "Local" -}}
{{- $reason = "TZ=Local means the csi-addons controller's zone; name a zone instead" -}}
{{- else if not (include "kustodian.sched.zoneKnown" (list "py" $zone)) -}}
{{- $reason = printf "unknown time zone %s (use an IANA name such as Europe/Paris or UTC)" (include "kustodian.sched.quote" $zone) -}}
{{- else -}}
{{- $spec = include "kustodian.sched.strip" (list "py" $parts._1) -}}
{{- if not $spec -}}
{{- $reason = printf "nothing follows the time zone %s" (include "kustodian.sched.quote" $zone) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $reason -}}
{{- else if hasPrefix "@" $spec -}}
{{- $reason = include "kustodian.sched.descriptor" $spec -}}
{{- else if hasPrefix "@" (regexReplaceAll (printf `^[%s]+` $py) $spec "") -}}
{{- $reason = "remove the leading whitespace: robfig/cron only sees a descriptor at the start" -}}
{{- else -}}
{{- $fields := regexFindAll (printf `[^%s]+` $py) $spec -1 -}}
{{- $n := len $fields -}}
{{- if ne $n 5 -}}
{{- $reason = printf "it has %d field%s but a cron expression needs 5 (minute hour day-of-month month day-of-week)" $n (ternary "" "s" (eq $n 1)) -}}
{{- if eq $n 6 -}}
{{- $reason = printf "%s; csi-addons uses robfig/cron's standard parser, which has no seconds field" $reason -}}
{{- else if gt $n 6 -}}
{{- $reason = printf "%s; seconds and year fields are not supported by csi-addons (robfig/cron standard parser)" $reason -}}
{{- end -}}
{{- $hint := include "kustodian.sched.hint" $spec -}}
{{- if $hint -}}
{{- $reason = printf "%s; did you mean %s?" $reason (include "kustodian.sched.quote" $hint) -}}
{{- else if lt $n 5 -}}
{{- $reason = printf "%s, or a descriptor such as @daily or @every 6h" $reason -}}
{{- end -}}
{{- else -}}
{{- $months := dict "jan" 1 "feb" 2 "mar" 3 "apr" 4 "may" 5 "jun" 6 "jul" 7 "aug" 8 "sep" 9 "oct" 10 "nov" 11 "dec" 12 -}}
{{- $days := dict "sun" 0 "mon" 1 "tue" 2 "wed" 3 "thu" 4 "fri" 5 "sat" 6 -}}
{{- $bounds := list
      (dict "name" "minute" "low" 0 "high" 59 "names" dict "qm" false)
      (dict "name" "hour" "low" 0 "high" 23 "names" dict "qm" false)
      (dict "name" "day-of-month" "low" 1 "high" 31 "names" dict "qm" true)
      (dict "name" "month" "low" 1 "high" 12 "names" $months "first" "jan, feb, mar" "qm" false)
      (dict "name" "day-of-week" "low" 0 "high" 6 "names" $days "first" "sun, mon, tue" "qm" true) -}}
{{- $parsed := list -}}
{{- range $i, $raw := $fields -}}
{{- if not $reason -}}
{{- $b := index $bounds $i -}}
{{- $f := dict -}}
{{- $_ := include "kustodian.sched.field" (dict "raw" $raw "b" $b "out" $f) -}}
{{- if $f.reason -}}
{{- $reason = printf "%s field %s: %s" $b.name (include "kustodian.sched.quote" $raw) $f.reason -}}
{{- end -}}
{{- $parsed = append $parsed $f -}}
{{- end -}}
{{- end -}}
{{- if not $reason -}}
{{- /* schedule._check_can_fire: "0 0 30 2 *" never fires (robfig returns the zero time) */ -}}
{{- $dom := index $parsed 2 -}}{{- $dow := index $parsed 4 -}}
{{- if and (not $dom.star) $dow.star -}}
{{- $length := dict "1" 31 "2" 29 "3" 31 "4" 30 "5" 31 "6" 30 "7" 31 "8" 31 "9" 30 "10" 31 "11" 30 "12" 31 -}}
{{- $longest := 0 -}}
{{- range $m := keys (index $parsed 3).set -}}{{- $longest = max $longest (get $length $m) -}}{{- end -}}
{{- if gt (int $dom.min) (int $longest) -}}
{{- $reason = "never fires: none of those days exists in those months" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $reason -}}
{{- end -}}

{{/* strconv.Atoi as robfig reads a number (robfig._atoi): (dict "text" T "out" D) sets D.v or D.reason. */}}
{{- define "kustodian.sched.atoi" -}}
{{- $t := .text -}}{{- $out := .out -}}
{{- if not (regexMatch `^[+-]?[0-9]+$` $t) -}}
{{- $_ := set $out "reason" (printf "failed to parse int from %s: strconv.Atoi: parsing \"%s\": invalid syntax" $t $t) -}}
{{- else -}}
{{- $neg := hasPrefix "-" $t -}}
{{- $digits := regexReplaceAll `^[+-]?0*` $t "" | default "0" -}}
{{- $limit := ternary "9223372036854775808" "9223372036854775807" $neg -}}
{{- if or (gt (len $digits) 19) (and (eq (len $digits) 19) (gt $digits $limit)) -}}
{{- $_ := set $out "reason" (printf "failed to parse int from %s: strconv.Atoi: parsing \"%s\": value out of range" $t $t) -}}
{{- else if and $neg (ne $digits "0") -}}
{{- $_ := set $out "reason" (printf "negative number (-%s) not allowed: %s" $digits $t) -}}
{{- else -}}
{{- $_ := set $out "v" (atoi $digits | int64) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A number or a name of a robfig field (robfig._int_or_name, Go's own lower): (dict "text" T "b" BOUNDS "out" D). */}}
{{- define "kustodian.sched.intOrName" -}}
{{- $named := get .b.names (lower .text) -}}
{{- if ne (toString $named) "" -}}
{{- $_ := set .out "v" (int64 $named) -}}
{{- else -}}
{{- include "kustodian.sched.atoi" (dict "text" .text "out" .out) -}}
{{- end -}}
{{- end -}}

{{/* One comma item of a robfig field (robfig._get_range): (dict "expr" E "b" BOUNDS): its error, or nothing. */}}
{{- define "kustodian.sched.robfigRange" -}}
{{- $expr := .expr -}}{{- $b := .b -}}
{{- $rs := splitList "/" $expr -}}
{{- $lh := splitList "-" (index $rs 0) -}}
{{- $reason := "" -}}
{{- $start := 0 -}}{{- $end := 0 -}}{{- $step := 1 -}}
{{- if or (eq (index $lh 0) "*") (eq (index $lh 0) "?") -}}
{{- $start = int64 $b.low -}}{{- $end = int64 $b.high -}}
{{- else -}}
{{- $v := dict -}}
{{- $_ := include "kustodian.sched.intOrName" (dict "text" (index $lh 0) "b" $b "out" $v) -}}
{{- if $v.reason -}}{{- $reason = $v.reason -}}
{{- else if eq (len $lh) 1 -}}{{- $start = $v.v -}}{{- $end = $v.v -}}
{{- else if eq (len $lh) 2 -}}
{{- $start = $v.v -}}
{{- $hv := dict -}}
{{- $_ := include "kustodian.sched.intOrName" (dict "text" (index $lh 1) "b" $b "out" $hv) -}}
{{- if $hv.reason }}{{ $reason = $hv.reason }}{{ else }}{{ $end = $hv.v }}{{ end -}}
{{- else -}}
{{- $reason = printf "too many hyphens: %s" $expr -}}
{{- end -}}
{{- end -}}
{{- if $reason -}}
{{- else if eq (len $rs) 2 -}}
{{- $sv := dict -}}
{{- $_ := include "kustodian.sched.atoi" (dict "text" (index $rs 1) "out" $sv) -}}
{{- if $sv.reason -}}{{- $reason = $sv.reason -}}
{{- else -}}
{{- $step = $sv.v -}}
{{- if eq (len $lh) 1 }}{{ $end = int64 $b.high }}{{ end -}}
{{- end -}}
{{- else if gt (len $rs) 2 -}}
{{- $reason = printf "too many slashes: %s" $expr -}}
{{- end -}}
{{- if $reason -}}
{{- $reason -}}
{{- else if lt (int64 $start) (int64 $b.low) -}}
beginning of range ({{ $start }}) below minimum ({{ $b.low }}): {{ $expr }}
{{- else if gt (int64 $end) (int64 $b.high) -}}
end of range ({{ $end }}) above maximum ({{ $b.high }}): {{ $expr }}
{{- else if gt (int64 $start) (int64 $end) -}}
beginning of range ({{ $start }}) beyond end of range ({{ $end }}): {{ $expr }}
{{- else if eq (int64 $step) 0 -}}
step of range should be a positive number: {{ $expr }}
{{- end -}}
{{- end -}}

{{/* robfig/cron v3's ParseStandard (robfig.parse_standard): its error, or nothing when it accepts. */}}
{{- define "kustodian.sched.robfig" -}}
{{- $spec := . -}}
{{- $go := include "kustodian.sched.gospace" . -}}
{{- $reason := "" -}}
{{- if not $spec -}}
{{- $reason = "empty spec string" -}}
{{- else if or (hasPrefix "TZ=" $spec) (hasPrefix "CRON_TZ=" $spec) -}}
{{- if not (contains " " $spec) -}}
{{- $reason = "robfig/cron panics on a TZ= prefix with no space after it" -}}
{{- else -}}
{{- $parts := splitn " " 2 $spec -}}
{{- $zone := (splitn "=" 2 $parts._0)._1 -}}
{{- if has $zone (list "" "UTC" "Local") -}}
{{- else if or (contains ".." $zone) (contains "\\" $zone) (hasPrefix "/" $zone) -}}
{{- $reason = printf "provided bad location %s: time: invalid location name" $zone -}}
{{- else if not (include "kustodian.sched.zoneKnown" (list "go" $zone)) -}}
{{- $reason = printf "provided bad location %s: unknown time zone %s" $zone $zone -}}
{{- end -}}
{{- $spec = include "kustodian.sched.strip" (list "go" (printf " %s" $parts._1)) -}}
{{- end -}}
{{- end -}}
{{- if $reason -}}
{{- else if hasPrefix "@" $spec -}}
{{- if has $spec (list "@yearly" "@annually" "@monthly" "@weekly" "@daily" "@midnight" "@hourly") -}}
{{- else if hasPrefix "@every " $spec -}}
{{- $d := dict -}}
{{- $_ := include "kustodian.sched.duration" (dict "text" (trimPrefix "@every " $spec) "out" $d) -}}
{{- if $d.reason }}{{ $reason = printf "failed to parse duration %s: %s" $spec $d.reason }}{{ end -}}
{{- else -}}
{{- $reason = printf "unrecognized descriptor: %s" $spec -}}
{{- end -}}
{{- else -}}
{{- $fields := regexFindAll (printf `[^%s]+` $go) $spec -1 -}}
{{- if ne (len $fields) 5 -}}
{{- $reason = printf "expected exactly 5 fields, found %d: [%s]" (len $fields) (join " " $fields) -}}
{{- else -}}
{{- $months := dict "jan" 1 "feb" 2 "mar" 3 "apr" 4 "may" 5 "jun" 6 "jul" 7 "aug" 8 "sep" 9 "oct" 10 "nov" 11 "dec" 12 -}}
{{- $days := dict "sun" 0 "mon" 1 "tue" 2 "wed" 3 "thu" 4 "fri" 5 "sat" 6 -}}
{{- $bounds := list (dict "low" 0 "high" 59 "names" dict) (dict "low" 0 "high" 23 "names" dict)
      (dict "low" 1 "high" 31 "names" dict) (dict "low" 1 "high" 12 "names" $months)
      (dict "low" 0 "high" 6 "names" $days) -}}
{{- range $i, $field := $fields -}}
{{- range $expr := splitList "," $field -}}
{{- if and $expr (not $reason) -}}
{{- $reason = include "kustodian.sched.robfigRange" (dict "expr" $expr "b" (index $bounds $i)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $reason -}}
{{- end -}}

{{/*
Why the webhook refuses SCHEDULE in its own ConfigMap (schedule.strict_schedule_error), or nothing:
Kustodian's reason where its reading objects, robfig's where only robfig refuses; "" is refused
there (csi-addons would run @weekly: the ConfigMap says it).
*/}}
{{- define "kustodian.sched.strict" -}}
{{- if eq . "" -}}
empty (csi-addons would run @weekly: write @weekly)
{{- else -}}
{{- $reason := include "kustodian.sched.parse" . -}}
{{- if $reason }}{{ $reason }}{{ else }}{{ include "kustodian.sched.robfig" . }}{{ end -}}
{{- end -}}
{{- end -}}

{{/*
Fails the render on every schedule of reclaimSpace.config the webhook would refuse, with its
message and the value's key, the way reclaim/config.py names them (`auto-reclaim-storageclass.rbd`,
`auto-reclaim-storageclass["rbd.fast"]` for a name that is not a plain key). reclaimSpace.config is
the one place in the values where a schedule is written (its other keys are durations and a switch,
checked by values.schema.json). The StorageClass names are checked with it, as the webhook does.
*/}}
{{- define "kustodian.checkReclaimSchedules" -}}
{{- $problems := list -}}
{{- $section := (.Values.reclaimSpace.config | default dict) | dig "auto-reclaim-storageclass" dict -}}
{{- range $sc := keys $section | sortAlpha -}}
{{- $schedule := get $section $sc -}}
{{- $key := ternary (printf ".%s" $sc) (printf "[%s]" (include "kustodian.sched.quote" $sc)) (regexMatch `^[A-Za-z0-9_-]+\n?$` $sc) -}}
{{- $path := printf "reclaimSpace.config.auto-reclaim-storageclass%s" $key -}}
{{- if or (gt (len $sc) 253) (not (regexMatch `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\n?$` $sc)) -}}
{{- $problems = append $problems (printf "%s: not a valid StorageClass name (lowercase letters, digits, '-' and '.')" $path) -}}
{{- end -}}
{{- if kindIs "string" $schedule -}}
{{- with include "kustodian.sched.strict" $schedule -}}
{{- $problems = append $problems (printf "%s: %s is not a valid schedule: %s" $path (include "kustodian.sched.quote" $schedule) .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- with $problems -}}
{{- fail (join "; " .) -}}
{{- end -}}
{{- end -}}
