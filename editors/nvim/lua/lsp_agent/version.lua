-- The lsp-agent version this plugin was written for (:checkhealth compares the server's with it).
return "0.1.0"
