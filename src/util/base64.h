// Base64 in the URL-safe alphabet (RFC 4648 section 5) without '=' padding: the form
// PEP 376/427 RECORD files use for hashes ("sha256=<urlsafe-b64-nopad>"). The coding is
// OpenSSL's (EVP_EncodeBlock, standard alphabet); this file maps the two alphabet
// differences ('+/' vs '-_') and drops the padding. Nothing decodes: RECORD digests are
// compared as text.
#pragma once
#include <cstddef>
#include <span>
#include <string>

namespace tailor {

std::string base64url_nopad_encode(std::span<const std::byte> data);

}  // namespace tailor
