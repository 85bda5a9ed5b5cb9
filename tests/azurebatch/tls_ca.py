"""A throw-away test CA and a loopback server certificate (TEST CODE ONLY).

The Batch SDK (azure-core's BearerTokenCredentialPolicy) refuses to send a bearer token over plain HTTP, so the
Batch double (and the TLS relay in front of Prism) serve HTTPS with a certificate for 127.0.0.1/localhost signed by
this CA. A client trusts it through its CA bundle: `BatchClient(..., connection_verify=ca_file)` or
REQUESTS_CA_BUNDLE=ca_file (honoured by azure-core's requests transport and by az).
"""
import datetime
import ipaddress
import os
import ssl

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(common_name):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


class TestCA:
    """A CA written to `directory`: `ca_file` (the bundle a client trusts), `cert_file`/`key_file` (the loopback
    server's certificate chain and key); `server_context()` is the ssl context a server serves with."""
    __test__ = False  # not a pytest class

    def __init__(self, directory):
        os.makedirs(directory, exist_ok=True)
        now = datetime.datetime.now(datetime.timezone.utc)
        start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=2)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
        ca_cert = (x509.CertificateBuilder().subject_name(_name('azext-batchai-sweep Batch test CA'))
                   .issuer_name(_name('azext-batchai-sweep Batch test CA')).public_key(ca_key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                                key_encipherment=False, data_encipherment=False,
                                                key_agreement=False, key_cert_sign=True, crl_sign=True,
                                                encipher_only=False, decipher_only=False), critical=True)
                   .add_extension(ca_ski, critical=False)
                   .sign(ca_key, hashes.SHA256()))
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(_name('127.0.0.1')).issuer_name(ca_cert.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(end)
                .add_extension(x509.SubjectAlternativeName([x509.DNSName('localhost'),
                                                            x509.IPAddress(ipaddress.ip_address('127.0.0.1'))]),
                               critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
                               critical=False)
                .sign(ca_key, hashes.SHA256()))
        self.ca_file = os.path.join(directory, 'test-ca.pem')
        self.cert_file = os.path.join(directory, 'server.pem')
        self.key_file = os.path.join(directory, 'server-key.pem')
        with open(self.ca_file, 'wb') as f:
            f.write(ca_cert.public_bytes(serialization.Encoding.PEM))
        with open(self.cert_file, 'wb') as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM) + ca_cert.public_bytes(serialization.Encoding.PEM))
        with open(self.key_file, 'wb') as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))

    def server_context(self):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context
