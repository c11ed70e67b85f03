import http.server, os
http.server.test(port=int(os.environ.get("PORT", "3000")), bind="0.0.0.0")
