// Base64 in the URL-safe alphabet (RFC 4648 section 5) without '=' padding: the form
// PEP 376/427 RECORD files use for hashes ("sha256=<urlsafe-b64-nopad>"). The coding is
// OpenSSL's (EVP_EncodeBlock / EVP_DecodeBlock, standard alphabet); this file maps the
// two alphabet differences ('+/' vs '-_') and the padding.
#pragma once
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tailor {

std::string base64url_nopad_encode(std::span<const std::byte> data);
/// Decodes URL-safe base64; padding is accepted but not required. nullopt on any
/// character outside the alphabet or an impossible length.
std::optional<std::vector<std::byte>> base64url_decode(std::string_view text);

}  // namespace tailor
