import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.UUID;

/**
 * Every JDK random generator a program can get without a seed: SHA1PRNG (whose seeder digests
 * the system properties, Runtime.freeMemory and more), the default SecureRandom (NativePRNG
 * on Linux), DRBG, NativePRNGNonBlocking, and UUID.randomUUID.
 */
public class Entropy {
    public static void main(String[] args) throws Exception {
        byte[] b = new byte[16];
        SecureRandom sha = SecureRandom.getInstance("SHA1PRNG");
        sha.nextBytes(b);
        System.out.println("SHA1PRNG " + HexFormat.of().formatHex(b));
        System.out.println("SHA1PRNG again " + SecureRandom.getInstance("SHA1PRNG").nextLong());
        System.out.println("default " + new SecureRandom().nextLong());
        SecureRandom drbg = SecureRandom.getInstance("DRBG");
        drbg.nextBytes(b);
        System.out.println("DRBG " + HexFormat.of().formatHex(b));
        System.out.println("NativePRNGNonBlocking " + SecureRandom.getInstance("NativePRNGNonBlocking").nextLong());
        System.out.println("seed " + HexFormat.of().formatHex(new SecureRandom().generateSeed(8)));
        System.out.println("uuid " + UUID.randomUUID());
    }
}
