import java.security.SecureRandom;
import java.util.UUID;

/**
 * UUID.randomUUID and SecureRandom: on Linux the JDK's NativePRNG reads /dev/urandom through
 * FileInputStream (and Security reads java.security the same way) on the calling thread.
 */
public class Uuid {
    public static void main(String[] args) {
        System.out.println("uuid " + UUID.randomUUID());
        System.out.println("secure " + new SecureRandom().nextLong());
        System.out.println("uuid " + UUID.randomUUID());
    }
}
