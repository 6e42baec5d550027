#!/usr/bin/python3
"""An issuer amesh did not write: Debian's python3-jwt and python3-cryptography make an RSA key, its JSON Web Key
Set, and tokens signed with it. Prints one JSON object: {"jwks": <key set>, "<name>": <token>, ...}.

usage: mint_jwt.py ISSUER SUBJECT   (tokens: "valid" expires in an hour, "expired" an hour ago, "other_key" is
signed by another key with the same key id)
"""
import json
import sys
import time

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm


def main():
    issuer, subject = sys.argv[1:3]
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    public.update(kid="k1", alg="RS256", use="sig")
    now = int(time.time())

    def sign(exp, signer):
        claims = {"iss": issuer, "sub": subject, "iat": now, "exp": exp, "groups": ["admins"]}
        return jwt.encode(claims, signer, algorithm="RS256", headers={"kid": "k1"})

    print(json.dumps({
        "jwks": {"keys": [public]},
        "valid": sign(now + 3600, key),
        "expired": sign(now - 3600, key),
        "other_key": sign(now + 3600, other),
    }))


if __name__ == "__main__":
    main()
