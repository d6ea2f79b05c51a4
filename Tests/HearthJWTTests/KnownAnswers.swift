// Known answers for HearthJWT, made once with Python's `cryptography` 50.0.2 (an independent
// implementation): a fixed RSA-2048 key, an RS256 token it signed, its JWKS and a self-signed
// X.509 certificate. Test data only: the key signs nothing else.

enum KnownAnswers {
    static let privateKeyPEM = """
-----BEGIN PRIVATE KEY-----
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDYQx84k540Y30d
r6t80OIwbqt4ObfU64oZfJCoPcviPG3s9eFDDJp6bp/w8pl00Q5/QCrFSP593g4P
ZgU54Zr+PUcpZIUhhmYB36QyKc0W86zdGiL6gGU9WvR9kPwNNd5qqq22iljvkk+A
isI+9QqOcVWqsmYy1jwoiumw4cOWpkVMTot2Xo+/UBFX4ArIVjPqDMJNrumZNzrQ
pfc2z12GLlgrJVEGzw2t4Vfs12reNMXHJ1a7py4Ot3/ikSTiWaJYyNQCMNfvdXjg
jM1Jd0VnJIqIbeX15MpltsSI4P+VWOicDxdr01z8IDzLY9R+sLg0O517KElGDTsG
82rEst09AgMBAAECggEALb6A76A18iHrOKjMbtHmTlVSetNGociSxRJWrOepZTjg
DaPy2pJjaKtWtIo0UIPZ+6uwgFuQzUH3mmU7jMM+XDHNCCHlkTJTCGlsW1oBMi4n
7frV1EPtZj2Dgr30uryex9RDe12nM0GxBGEVdmixq3CorLsgp/ct8Wt0w//1Nbuh
Gz9f5LSbNyoAAEElcI/OkP1WL1roVB/xUtxNJ3CxIB/aAWHrxJBNEDb1XT7gz3eJ
QqBg6M+BperMsKIGT0/V5LqHV4/+3qGcLEVR2Bz/lPGrJBSxWmXLDZxhEAReDwks
ep+iMQz6G0xFS0p4U+/QtCWukzqQzwO0ENC3i9S2UQKBgQD8T5azfbJxB3EpEWgF
bMkf3IMKvGn9xPwdq48k39qfPU5iWxI563yAIsmRCQd79Rufdjf/iAabGnoMnxJ9
2MLf+FcjJIFGxd5PGGRz0NDiMQh3cOejPDEAaq2/6G+xNMoxrgboADwSEUWZVjKm
9cICj32qhvxiH2aWUzXIu9nK6QKBgQDbbJnxXLVkVYxIU75zaIwf+iY472KRFMcR
T6Ts9JzGLGrgYJ4pwj7Fte+lf2SZ+7dFGQhRE4rPs/UC2LRwXmC64xwC81KwJdxK
BLO8qMTTsgmkki07Zsqm80fBvaio7E/mA/DrjOJP8dGDmdXM725vP2fs3H58r85I
D8aHBC4jNQKBgQDp3bOoB5iAoA9Jq7KpZJ5ABBsKtn3gFNhDgCOcYEm6VA71p8iL
GzU5aAVBhAcF5LmH4wIgvqqw1afPTxrKv0JSa1QJZOrW+M0Ir2lc2G7lWeGpJGPw
r/gTlM4cFYyBypan2dDY9m63qH7ElFs62ozL5sjqaVhCcyyZpeMyfrxvEQKBgQCK
wi7Ht3zuKjtAMdUqXl7eie5J6vhGDwGkLN17C2Vo3QXpRrA+cBwKI3edDOaticTn
6WCdBOKvXnn+htP0i3pYNO6t3vnXctnP5RFUqNVvmhMHA3mfKu3Ujdw+5JUX3fjY
2H0uODWVoLKBqnLN2kvYBhzOaNGEQBkO8Qr2ruoOUQKBgCERQytDZNbywMcrjEVD
D8HR62HtRfbSGmd7RJGBpMbU2vSHzvP+a5sBXlb7CSOk7T36PpOpmDVdW8ZS25Ey
zVmZ92MP8k/oZs3lmoddzVy9093VkgB/nCsJElQartpEK7tJ6QIm5m/Qvlan/Mdl
3691LdhB81GnsL4+eKVVkAps
-----END PRIVATE KEY-----
"""

    /// Header `{"alg":"RS256","kid":"kat-1","typ":"JWT"}`, payload `{"iss":"https://securetoken.google.com/demo-jwt","aud":"demo-jwt","sub":"alice","iat":1700000000,"exp":1700003600}`.
    static let header = #"{"alg":"RS256","kid":"kat-1","typ":"JWT"}"#
    static let payload = #"{"iss":"https://securetoken.google.com/demo-jwt","aud":"demo-jwt","sub":"alice","iat":1700000000,"exp":1700003600}"#
    static let token = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImthdC0xIiwidHlwIjoiSldUIn0.eyJpc3MiOiJodHRwczovL3NlY3VyZXRva2VuLmdvb2dsZS5jb20vZGVtby1qd3QiLCJhdWQiOiJkZW1vLWp3dCIsInN1YiI6ImFsaWNlIiwiaWF0IjoxNzAwMDAwMDAwLCJleHAiOjE3MDAwMDM2MDB9.ySDXsPF4hsrXqwgAj_1SzKDgRo9ddGfN83egls1kX9AlS7I8zqxbXjG-F25T9ehF-gK6jM95uMNjVrB7lR7gXveRuqQwVOg7sP6qB6UkWDUFha4NQ4Qr6b7--MYHoWyVV3TtaN7AWgoEke-MdvF43M8srjJHxHFtisMBpTIEbtbsYK3hmdgqNsUtRVG-410DI_5gyDFLgyfosk0derMBdgVsOZhALDZa4W0L59VkcaqZ25VqiUF_7U5eIXqxlKWjGqKyVrF2cvOwNsLC96cOvxdNiHVRjs4LYgxycIDgugp-SdLM5jtC3nQYW1nfR8rtYuC5S7dD-lZbxvo2I6JsYA"

    /// kat-1 (RS256, sig), the same key marked `use: enc` (skipped), an EC key (skipped).
    static let jwks = #"{"keys":[{"kty":"RSA","alg":"RS256","use":"sig","kid":"kat-1","n":"2EMfOJOeNGN9Ha-rfNDiMG6reDm31OuKGXyQqD3L4jxt7PXhQwyaem6f8PKZdNEOf0AqxUj-fd4OD2YFOeGa_j1HKWSFIYZmAd-kMinNFvOs3Roi-oBlPVr0fZD8DTXeaqqttopY75JPgIrCPvUKjnFVqrJmMtY8KIrpsOHDlqZFTE6Ldl6Pv1ARV-AKyFYz6gzCTa7pmTc60KX3Ns9dhi5YKyVRBs8NreFX7Ndq3jTFxydWu6cuDrd_4pEk4lmiWMjUAjDX73V44IzNSXdFZySKiG3l9eTKZbbEiOD_lVjonA8Xa9Nc_CA8y2PUfrC4NDudeyhJRg07BvNqxLLdPQ","e":"AQAB"},{"kty":"RSA","use":"enc","kid":"enc-1","n":"2EMfOJOeNGN9Ha-rfNDiMG6reDm31OuKGXyQqD3L4jxt7PXhQwyaem6f8PKZdNEOf0AqxUj-fd4OD2YFOeGa_j1HKWSFIYZmAd-kMinNFvOs3Roi-oBlPVr0fZD8DTXeaqqttopY75JPgIrCPvUKjnFVqrJmMtY8KIrpsOHDlqZFTE6Ldl6Pv1ARV-AKyFYz6gzCTa7pmTc60KX3Ns9dhi5YKyVRBs8NreFX7Ndq3jTFxydWu6cuDrd_4pEk4lmiWMjUAjDX73V44IzNSXdFZySKiG3l9eTKZbbEiOD_lVjonA8Xa9Nc_CA8y2PUfrC4NDudeyhJRg07BvNqxLLdPQ","e":"AQAB"},{"kty":"EC","kid":"ec-1","crv":"P-256","x":"AA","y":"AA"}]}"#

    static let certificatePEM = """
-----BEGIN CERTIFICATE-----
MIICpjCCAY6gAwIBAgICEjQwDQYJKoZIhvcNAQELBQAwFjEUMBIGA1UEAwwLa2F0
LmV4YW1wbGUwHhcNMjUwMTAxMDAwMDAwWhcNMzUwMTAxMDAwMDAwWjAWMRQwEgYD
VQQDDAtrYXQuZXhhbXBsZTCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoCggEB
ANhDHziTnjRjfR2vq3zQ4jBuq3g5t9Trihl8kKg9y+I8bez14UMMmnpun/DymXTR
Dn9AKsVI/n3eDg9mBTnhmv49RylkhSGGZgHfpDIpzRbzrN0aIvqAZT1a9H2Q/A01
3mqqrbaKWO+ST4CKwj71Co5xVaqyZjLWPCiK6bDhw5amRUxOi3Zej79QEVfgCshW
M+oMwk2u6Zk3OtCl9zbPXYYuWCslUQbPDa3hV+zXat40xccnVrunLg63f+KRJOJZ
oljI1AIw1+91eOCMzUl3RWckioht5fXkymW2xIjg/5VY6JwPF2vTXPwgPMtj1H6w
uDQ7nXsoSUYNOwbzasSy3T0CAwEAATANBgkqhkiG9w0BAQsFAAOCAQEAFVJrsIoY
J5UbwzYxFYeW3aM6xY7hGhE9f7KG3hVED89NAb7XMYg2mqlAfWraKLLwYfOcIiVP
THeuBYOFK68ZdlwHqKfeflAXy2jtDAUniU56RIu2GSiH8i60t8lxRROFhVxMv4WV
saQM9FH0/n1JCZ/Cc3jb68k+IJ3uZ1OHPF4qM1UxPua6OQMgzACEhfLoPIPxfTIi
PrIQB3nyb4ooatnXpG4ET7nOwz6tZ0UgwT5JDh570M7whtsdM8OY84aQwYDWDGNZ
VRTLw0GiKSj6oprJWfsrkgMfv1lSz7Ffg2dssQoVxHe8Tn3ZPmmdD2EOzGfSHRIj
FDKF6xyFeC9Odg==
-----END CERTIFICATE-----
"""

    /// The DER SubjectPublicKeyInfo of the key, base64.
    static let publicKeySPKI = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA2EMfOJOeNGN9Ha+rfNDiMG6reDm31OuKGXyQqD3L4jxt7PXhQwyaem6f8PKZdNEOf0AqxUj+fd4OD2YFOeGa/j1HKWSFIYZmAd+kMinNFvOs3Roi+oBlPVr0fZD8DTXeaqqttopY75JPgIrCPvUKjnFVqrJmMtY8KIrpsOHDlqZFTE6Ldl6Pv1ARV+AKyFYz6gzCTa7pmTc60KX3Ns9dhi5YKyVRBs8NreFX7Ndq3jTFxydWu6cuDrd/4pEk4lmiWMjUAjDX73V44IzNSXdFZySKiG3l9eTKZbbEiOD/lVjonA8Xa9Nc/CA8y2PUfrC4NDudeyhJRg07BvNqxLLdPQIDAQAB"
}
