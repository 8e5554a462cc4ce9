#ifndef LIBSSH2_OS400QC3_H
#define LIBSSH2_OS400QC3_H
/*
 * Copyright (C) Patrick Monnerat <patrick@monnerat.net>
 * All rights reserved.
 *
 * Redistribution and use in source and binary forms, with or without
 * modification, are permitted provided that the following conditions are met:
 *
 * 1. Redistributions of source code must retain the above copyright notice,
 *    this list of conditions and the following disclaimer.
 *
 * 2. Redistributions in binary form must reproduce the above copyright notice,
 *    this list of conditions and the following disclaimer in the documentation
 *    and/or other materials provided with the distribution.
 *
 * 3. Neither the name of the copyright holder nor the names of its
 *    contributors may be used to endorse or promote products derived from this
 *    software without specific prior written permission.
 *
 * THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
 * AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
 * IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE
 * ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE
 * LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR
 * CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF
 * SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS
 * INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN
 * CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE)
 * ARISING IN ANY WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE
 * POSSIBILITY OF SUCH DAMAGE.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */

#define SSH2_CRYPTO_ENGINE libssh2_os400qc3
#define SSH2_CRYPTO_ENGINE_NAME "OS400QC3"

#include <stdlib.h>
#include <string.h>

#include <qc3cci.h>

/* Redefine character/string literals as always EBCDIC. */
#undef Qc3_Alg_Token
#define Qc3_Alg_Token         "\xC1\xD3\xC7\xC4\xF0\xF1\xF0\xF0" /* ALGD0100 */
#undef Qc3_Alg_Block_Cipher
#define Qc3_Alg_Block_Cipher  "\xC1\xD3\xC7\xC4\xF0\xF2\xF0\xF0" /* ALGD0200 */
#undef Qc3_Alg_Block_CipherAuth
#define Qc3_Alg_Block_CipherAuth \
                              "\xC1\xD3\xC7\xC4\xF0\xF2\xF1\xF0" /* ALGD0210 */
#undef Qc3_Alg_Stream_Cipher
#define Qc3_Alg_Stream_Cipher "\xC1\xD3\xC7\xC4\xF0\xF3\xF0\xF0" /* ALGD0300 */
#undef Qc3_Alg_Public_Key
#define Qc3_Alg_Public_Key    "\xC1\xD3\xC7\xC4\xF0\xF4\xF0\xF0" /* ALGD0400 */
#undef Qc3_Alg_Hash
#define Qc3_Alg_Hash          "\xC1\xD3\xC7\xC4\xF0\xF5\xF0\xF0" /* ALGD0500 */
#undef Qc3_Data
#define Qc3_Data              "\xC4\xC1\xE3\xC1\xF0\xF1\xF0\xF0" /* DATA0100 */
#undef Qc3_Array
#define Qc3_Array             "\xC4\xC1\xE3\xC1\xF0\xF2\xF0\xF0" /* DATA0200 */
#undef Qc3_Key_Token
#define Qc3_Key_Token         "\xD2\xC5\xE8\xC4\xF0\xF1\xF0\xF0" /* KEYD0100 */
#undef Qc3_Key_Parms
#define Qc3_Key_Parms         "\xD2\xC5\xE8\xC4\xF0\xF2\xF0\xF0" /* KEYD0200 */
#undef Qc3_Key_KSLabel
#define Qc3_Key_KSLabel       "\xD2\xC5\xE8\xC4\xF0\xF4\xF0\xF0" /* KEYD0400 */
#undef Qc3_Key_PKCS5
#define Qc3_Key_PKCS5         "\xD2\xC5\xE8\xC4\xF0\xF5\xF0\xF0" /* KEYD0500 */
#undef Qc3_Key_PEMCert
#define Qc3_Key_PEMCert       "\xD2\xC5\xE8\xC4\xF0\xF6\xF0\xF0" /* KEYD0600 */
#undef Qc3_Key_CSLabel
#define Qc3_Key_CSLabel       "\xD2\xC5\xE8\xC4\xF0\xF7\xF0\xF0" /* KEYD0700 */
#undef Qc3_Key_CSDN
#define Qc3_Key_CSDN          "\xD2\xC5\xE8\xC4\xF0\xF8\xF0\xF0" /* KEYD0800 */
#undef Qc3_Key_AppID
#define Qc3_Key_AppID         "\xD2\xC5\xE8\xC4\xF0\xF9\xF0\xF0" /* KEYD0900 */

#undef Qc3_ECB
#define Qc3_ECB               '\xF0' /* '0' */
#undef Qc3_CBC
#define Qc3_CBC               '\xF1' /* '1' */
#undef Qc3_OFB
#define Qc3_OFB               '\xF2' /* '2' */
#undef Qc3_CFB1Bit
#define Qc3_CFB1Bit           '\xF3' /* '3' */
#undef Qc3_CFB8Bit
#define Qc3_CFB8Bit           '\xF4' /* '4' */
#undef Qc3_CFB64Bit
#define Qc3_CFB64Bit          '\xF5' /* '5' */
#undef Qc3_CUSP
#define Qc3_CUSP              '\xF6' /* '6' */
#undef Qc3_CTR
#define Qc3_CTR               '\xF7' /* '7' */
#undef Qc3_CCM
#define Qc3_CCM               '\xF8' /* '8' */
#undef Qc3_No_Pad
#define Qc3_No_Pad            '\xF0' /* '0' */
#undef Qc3_Pad_Char
#define Qc3_Pad_Char          '\xF1' /* '1' */
#undef Qc3_Pad_Counter
#define Qc3_Pad_Counter       '\xF2' /* '2' */
#undef Qc3_PKCS1_00
#define Qc3_PKCS1_00          '\xF0' /* '0' */
#undef Qc3_PKCS1_01
#define Qc3_PKCS1_01          '\xF1' /* '1' */
#undef Qc3_PKCS1_02
#define Qc3_PKCS1_02          '\xF2' /* '2' */
#undef Qc3_ISO9796
#define Qc3_ISO9796           '\xF3' /* '3' */
#undef Qc3_Zero_Pad
#define Qc3_Zero_Pad          '\xF4' /* '4' */
#undef Qc3_ANSI_X931
#define Qc3_ANSI_X931         '\xF5' /* '5' */
#undef Qc3_OAEP
#define Qc3_OAEP              '\xF6' /* '6' */
#undef Qc3_Bin_String
#define Qc3_Bin_String        '\xF0' /* '0' */
#undef Qc3_BER_String
#define Qc3_BER_String        '\xF1' /* '1' */
#undef Qc3_MK_Struct
#define Qc3_MK_Struct         '\xF3' /* '3' */
#undef Qc3_KSLabel_Struct
#define Qc3_KSLabel_Struct    '\xF4' /* '4' */
#undef Qc3_PKCS5_Struct
#define Qc3_PKCS5_Struct      '\xF5' /* '5' */
#undef Qc3_PEMCert_String
#define Qc3_PEMCert_String    '\xF6' /* '6' */
#undef Qc3_CSLabel_String
#define Qc3_CSLabel_String    '\xF7' /* '7' */
#undef Qc3_CSDN_String
#define Qc3_CSDN_String       '\xF8' /* '8' */
#undef Qc3_Clear
#define Qc3_Clear             '\xF0' /* '0' */
#undef Qc3_Encrypted
#define Qc3_Encrypted         '\xF1' /* '1' */
#undef Qc3_MK_Encrypted
#define Qc3_MK_Encrypted      '\xF2' /* '2' */
#undef Qc3_Any_CSP
#define Qc3_Any_CSP           '\xF0' /* '0' */
#undef Qc3_Sfw_CSP
#define Qc3_Sfw_CSP           '\xF1' /* '1' */
#undef Qc3_Hdw_CSP
#define Qc3_Hdw_CSP           '\xF2' /* '2' */
#undef Qc3_Continue
#define Qc3_Continue          '\xF0' /* '0' */
#undef Qc3_Final
#define Qc3_Final             '\xF1' /* '1' */
#undef Qc3_MK_New
#define Qc3_MK_New            '\xF0' /* '0' */
#undef Qc3_MK_Current
#define Qc3_MK_Current        '\xF1' /* '1' */
#undef Qc3_MK_Old
#define Qc3_MK_Old            '\xF2' /* '2' */
#undef Qc3_MK_Pending
#define Qc3_MK_Pending        '\xF3' /* '3' */

/* Define which features are supported. */
#ifdef OPENSSL_NO_MD5
# define LIBSSH2_MD5 0
#else
# define LIBSSH2_MD5 1
#endif

#define LIBSSH2_HMAC_RIPEMD 0
#define LIBSSH2_HMAC_SHA256 1
#define LIBSSH2_HMAC_SHA512 1

#define LIBSSH2_AES_CBC 1
#define LIBSSH2_AES_CTR 1
#define LIBSSH2_AES_GCM 0
#define LIBSSH2_BLOWFISH 0
#define LIBSSH2_RC4 1
#define LIBSSH2_CAST 0
#define LIBSSH2_3DES 1

#define LIBSSH2_RSA 1
#define LIBSSH2_RSA_SHA1 1
#define LIBSSH2_RSA_SHA2 1
#define LIBSSH2_DSA 0
#define LIBSSH2_ECDSA 0
#define LIBSSH2_ED25519 0
#define LIBSSH2_MLKEM 0

#include "crypto_config.h"

/*******************************************************************
 *
 * OS/400 QC3 crypto-library backend: global handles structures.
 *
 *******************************************************************/

/* HMAC & private key algorithms support structure. */
struct os400qc3_crypto_ctx {
    Qc3_Format_ALGD0100_T hash;             /* Hash algorithm. */
    Qc3_Format_KEYD0100_T key;              /* Key. */
    struct os400qc3_crypto_ctx *kek;        /* Key encryption. */
};

struct os400qc3_bn {  /* Big number. */
    unsigned char *bignum;                  /* Number bits, little-endian. */
    size_t length;                          /* Length of bignum (# bytes). */
};

struct os400qc3_cipher {  /* Algorithm description. */
    char *fmt;                              /* Format of Qc3 structure. */
    int algo;                               /* Algorithm identifier. */
    unsigned char size;                     /* Block length. */
    unsigned char mode;                     /* Block mode. */
    int keylen;                             /* Key length. */
};

struct os400qc3_dh_ctx {  /* Diffie-Hellman context. */
    char token[8];                          /* Context token. */
};

/*******************************************************************
 *
 * OS/400 QC3 crypto-library backend: Define global types/codes.
 *
 *******************************************************************/

#define ssh2_crypto_init()       do {} while(0)
#define ssh2_crypto_exit()       do {} while(0)

#define ssh2_hash_ctx            Qc3_Format_ALGD0100_T
#define ssh2_hash_alg            unsigned int
#define ssh2_hmac_ctx            struct os400qc3_crypto_ctx
#define ssh2_cipher_ctx          struct os400qc3_crypto_ctx

#define SSH2_SHA1_ALG            Qc3_SHA1
#define SSH2_SHA256_ALG          Qc3_SHA256
#define SSH2_SHA384_ALG          Qc3_SHA384
#define SSH2_SHA512_ALG          Qc3_SHA512
#if LIBSSH2_MD5 || LIBSSH2_MD5_PEM
#define SSH2_MD5_ALG             Qc3_MD5
#endif

/* Bignum */

#define ssh2_bn                  struct os400qc3_bn
#define ssh2_bn_bytes(bn)        ((bn)->length)

/* Cipher */

#define SSH2_CIPHER_T(name)      struct os400qc3_cipher name

#define ssh2_cipher_aes128     {Qc3_Alg_Block_Cipher, Qc3_AES, 16, Qc3_CBC, 16}
#define ssh2_cipher_aes192     {Qc3_Alg_Block_Cipher, Qc3_AES, 16, Qc3_CBC, 24}
#define ssh2_cipher_aes256     {Qc3_Alg_Block_Cipher, Qc3_AES, 16, Qc3_CBC, 32}
#define ssh2_cipher_aes128ctr  {Qc3_Alg_Block_Cipher, Qc3_AES, 16, Qc3_CTR, 16}
#define ssh2_cipher_aes192ctr  {Qc3_Alg_Block_Cipher, Qc3_AES, 16, Qc3_CTR, 24}
#define ssh2_cipher_aes256ctr  {Qc3_Alg_Block_Cipher, Qc3_AES, 16, Qc3_CTR, 32}
#define ssh2_cipher_3des       {Qc3_Alg_Block_Cipher, Qc3_TDES, 8, Qc3_CBC, 24}
/* Nonsense values for chacha20-poly1305 */
#define ssh2_cipher_chacha20   {Qc3_Alg_Stream_Cipher, Qc3_RC4, 8, 0, 16}
#define ssh2_cipher_arcfour    {Qc3_Alg_Stream_Cipher, Qc3_RC4, 8, 0, 16}

#define ssh2_cipher_dtor(ctx)    ssh2_os400qc3_crypto_dtor(ctx)

#if LIBSSH2_RSA
#define ssh2_rsa_ctx             struct os400qc3_crypto_ctx
#define ssh2_rsa_free(rsa, session) \
    (ssh2_os400qc3_crypto_dtor(rsa), free((char *)rsa), (void)(session))
#define ssh2_prepare_iovec(vec, len) \
    memset((char *)(vec), 0, (len) * sizeof(struct iovec))
#if LIBSSH2_RSA_SHA1
#define ssh2_rsa_sha1_signv(rsa, session, sig, siglen, count, vector) \
    ssh2_os400qc3_rsa_signv(rsa, session, Qc3_SHA1, sig, siglen, count, vector)
#endif
#if LIBSSH2_RSA_SHA2
#define ssh2_rsa_sha2_256_signv(rsa, session, sig, siglen, cnt, vector) \
    ssh2_os400qc3_rsa_signv(rsa, session, Qc3_SHA256, sig, siglen, cnt, vector)
#define ssh2_rsa_sha2_512_signv(rsa, session, sig, siglen, cnt, vector) \
    ssh2_os400qc3_rsa_signv(rsa, session, Qc3_SHA512, sig, siglen, cnt, vector)
#endif

int ssh2_os400qc3_rsa_signv(ssh2_rsa_ctx *rsa, LIBSSH2_SESSION *session,
                            int algo,
                            unsigned char **signature, size_t *signature_len,
                            int veccount, const struct iovec vector[]);
#endif /* LIBSSH2_RSA */

#define ssh2_dh_ctx              struct os400qc3_dh_ctx

/* Default generate and safe prime sizes for diffie-hellman-group-exchange-sha1
   Qc3 is limited to a maximum 2048-bit modulus/key size. */
#define SSH2_DH_GEX_MINGROUP     1024
#define SSH2_DH_GEX_OPTGROUP     1536
#define SSH2_DH_GEX_MAXGROUP     2048

#define SSH2_DH_MAX_MODULUS_BITS 2048

/*******************************************************************
 *
 * OS/400 QC3 crypto-library backend: Support procedure prototypes.
 *
 *******************************************************************/

void ssh2_os400qc3_crypto_dtor(struct os400qc3_crypto_ctx *x);

#endif /* LIBSSH2_OS400QC3_H */

/* vim: set expandtab ts=4 sw=4: */
