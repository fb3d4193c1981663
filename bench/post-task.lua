-- make bench, fronts E and F: POST /operations?action=getEsTaskStatus with
-- a task of the stand-in search cluster (the URL gives the path, wrk -H the
-- Authorization header).  A static request: no Lua runs per request.
wrk.method = "POST"
wrk.body = '{"task":"HI4YEIRMRuSdwsE4bCK7Bg:192"}'
wrk.headers["Content-Type"] = "application/json"
