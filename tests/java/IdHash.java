import java.net.InetAddress;

/** Identity hashes after a host name lookup (what log4j2 does at start, then logs Object@hash). */
public class IdHash {
    public static void main(String[] args) throws Exception {
        String host = InetAddress.getLocalHost().getHostName();
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 4; i++) {
            sb.append(' ').append(Integer.toHexString(System.identityHashCode(new Object())));
        }
        System.out.println("hashes" + sb);
        System.out.println("host named " + !host.isEmpty());
    }
}
