-- make bench, fronts A to D: GET requests, each with the next of the
-- BENCH_TOKENS valid tokens (round robin), so that without a cache (D)
-- concurrent requests never share a Redis lookup.  The requests are built
-- once in init(); per request, Lua only picks the next one.
--
--   wrk -s tokens.lua URL -- tokens-file
--
-- A and B get the same requests (they ignore the token), so that the
-- client does the same work for every front.

local requests = {}
local n, i = 0, 0

function init(args)
   local headers = {}
   for k, v in pairs(wrk.headers) do
      headers[k] = v
   end

   for token in io.lines(args[1]) do
      headers["Authorization"] = "Bearer " .. token
      n = n + 1
      requests[n] = wrk.format(nil, nil, headers)
   end

   if n == 0 then
      error("no tokens in " .. args[1])
   end
end

function request()
   i = i % n + 1
   return requests[i]
end
