"""A throw-away CA and a server certificate for 127.0.0.1, made with the openssl command (for the gRPC TLS test)."""
import os
import subprocess


def make(dirname):
    """(ca.pem, srv.pem, srv.key) paths in dirname."""
    def sh(cmd):
        subprocess.run(cmd, shell=True, check=True, cwd=dirname, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
    sh("openssl req -x509 %s -days 2 -subj /CN=kvcm-test-ca -keyout ca.key -out ca.pem" % ec)
    sh("openssl req %s -subj /CN=127.0.0.1 -keyout srv.key -out srv.csr" % ec)
    with open(os.path.join(dirname, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    sh("openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext -out srv.pem")
    return tuple(os.path.join(dirname, n) for n in ("ca.pem", "srv.pem", "srv.key"))
