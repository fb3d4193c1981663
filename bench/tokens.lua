-- make bench, fronts A to D, G and H: GET requests, each with the next of
-- the BENCH_TOKENS valid tokens (round robin), so that without a cache (D,
-- H) concurrent requests never share a Redis lookup.  The requests are
-- built once in init(); per request, Lua only picks the next one.
--
--   wrk -s tokens.lua URL -- tokens-file [first]
--
-- first (make bench-scale): the 0-based line to start at, so that a run
-- goes on where the one before stopped.
--
-- A and B get the same requests as C and D (they ignore the token), so
-- that the client does the same work for those fronts; G and H get the
-- signed tokens' file, the same number of tokens, each a longer header.

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

   i = (tonumber(args[2]) or 0) % n
end

function request()
   i = i % n + 1
   return requests[i]
end
