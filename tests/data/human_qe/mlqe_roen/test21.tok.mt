In France , long-term demographic stagnation has started , restoring a generation .
wisdom , and God is no longer called , will enjoy
More than 1 000 military vessels and some more than 5 000 support vessels have been involved in the operation .
900 midwives have been built so that the spirits of their ancestors can protect them .
Finished in 2003 , Taipei 101 is 448 metres high , which was surrounded in 2010 by Burj Khalifa , reaching 828 metres high .
Today , it includes several international dishes of food .
On the other hand , the Jewish Jews started a rebellion against Roman domination , trying to restore the independent regate Israel .
The life expectancy in Croatia is at birth of 75,7 years .
There were many attempts to change this and the most important of all was in Warsaw , where the uprising was organised .
One evening before the birthday , women and girls known to make , or to take , the flag .
At Leopold 's death , France declared war against his son , Francisc .
He has power to defend the tunnel house and household and the trouble halls .
Inavoidable impact with the federation of conditioners took place and was dreadful .
It operates numerous television and radio stations in the UK and abroad , with domestic services funded from .
It shall immediately submit , on simple request by the Commission , information on the measures already taken and planned to comply with this Decision .
The difficult pack allows for better quality work and is spreading in larger and larger areas contributing to higher yields .
The President was alone in contact with foreign governments , having a monopoly of information on foreign affairs .
They have been mistaken on the walls of the exhibition and social thematic compositions a good business , Recruitment , Emigration , Ignorance and Doi vague .
Since 1984 , his leader has had a red distinctive T-shirt .
He is aware of everyone who matters in the artistic world of plastics .
Outside these areas , it is generally considered that a fat settlement , albeit on a very small scale , has also taken place .
In Europe , Finland alone has a greater density of lakes .
The committees were responsible for bringing the cases before the Revolutionary Court of Paris .
Thus , the boysters had to unite around a gentlemen to support antiotoman politics .
This manoeuvre exposed the French Army I side to Lille .
But the means used were in conflict with the demobilisation of the French army , and the troops did not understand the need for this far-reaching war .
The Germans have occupied Lyon , it must definitely be avoided that they get to the sea first .
Here , the Craiovei divisive is gathering , today it is museum .
It then made the second copy of the teeth in the galvanoplasmid technique .
Bone are the luminosity slides that take place in the volume of ' Poeme translucent ' .
