import java.net.InetAddress;

/**
 * Identity hashes after a host name lookup (what log4j2 does at start, then logs Object@hash),
 * and with an argument after a UUID and a temporary file's name first.
 */
public class IdHash {
    public static void main(String[] args) throws Exception {
        if (args.length > 0) {
            // SecureRandom's first use sets NativePRNG up, which takes identity hashes too.
            System.out.println("uuid " + java.util.UUID.randomUUID().toString().length());
            java.nio.file.Files.delete(java.nio.file.Files.createTempFile("idhash", ".tmp"));
        }
        String host = InetAddress.getLocalHost().getHostName();
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 4; i++) {
            sb.append(' ').append(Integer.toHexString(System.identityHashCode(new Object())));
        }
        System.out.println("hashes" + sb);
        System.out.println("host named " + !host.isEmpty());
    }
}
