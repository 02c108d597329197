#!/usr/bin/env bash
# Makes a self-signed certificate and key for local wss:// use (valid 30 days for localhost and
# 127.0.0.1). Usage: Scripts/make-cert.sh [DIR]   (default: ./tls)
#   tetherd --tls-cert DIR/cert.pem --tls-key DIR/key.pem
#   tether --url wss://127.0.0.1:8080 --ca DIR/cert.pem counter
set -euo pipefail
dir="${1:-tls}"
mkdir -p "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/key.pem" -out "$dir/cert.pem" -days 30 \
    -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null
chmod 600 "$dir/key.pem"
echo "wrote $dir/cert.pem and $dir/key.pem"
